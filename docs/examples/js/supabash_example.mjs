// supabash from JavaScript (Node 20) with @supabase/supabase-js and its `.rpc()`.
//
// Three steps, each a subcommand, run in this order by tests/tests/examples.rs against a real
// database with the extension and the PostgREST stand-in:
//
//   basics                as a user: create a workspace, commit, read a document, page
//                         history, handle a 409 conflict
//   retry WORKSPACE       as the user: a commit that meets a retryable coordination error
//                         (55P03) is retried with the same transaction id until it lands
//   delegated WORKSPACE   as service_role: exchange a delegated capability for a grant, then
//                         read and commit with it
//
// Environment: SUPABASE_URL (https://<project>.supabase.co), SUPABASE_PUBLISHABLE_KEY,
// SUPABASH_USER_TOKEN (a user's access token), SUPABASH_SERVICE_TOKEN (the service-role key)
// and, for `delegated`, SUPABASH_CAPABILITY (a token the host's issuer signed; see
// docs/capabilities.md). Each step prints one JSON object.

import { createClient } from "@supabase/supabase-js";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
// Node 20 has no WebSocket of its own; supabase-js's realtime client needs one even when, as
// here, only .rpc() is used (Node 22 and later need no `ws`).
import ws from "ws";

const URL = process.env.SUPABASE_URL;
const KEY = process.env.SUPABASE_PUBLISHABLE_KEY;

/** A client acting with `token`; a delegated grant travels in its own header. */
function client(token, grant) {
  const headers = { Authorization: `Bearer ${token}` };
  // Never in the URL: read RPCs go over GET, and query strings end up in logs.
  if (grant) headers["X-Supabash-Grant"] = grant;
  return createClient(URL, KEY, {
    global: { headers },
    auth: { persistSession: false, autoRefreshToken: false },
    realtime: { transport: ws },
  });
}

/** Calls RPC `name`; reads (STABLE RPCs) go over GET so a read replica can serve them. */
async function call(db, name, args = {}, { read = false } = {}) {
  const { data, error } = await db.rpc(name, args, { get: read });
  if (error) throw error;
  return data;
}

/** The supabash error marker that starts the message, e.g. SUPABASH_COMMIT_CONFLICT. */
const marker = (error) => (error.message ?? "").split(":")[0];

async function commit(db, workspace, changes, base, extra = {}) {
  const args = { workspace_id: workspace, changes, actor: "js-example", ...extra };
  if (base) args.base_revision = base;
  return (await call(db, "supabash_commit", args)).receipt;
}

async function basics() {
  const db = client(process.env.SUPABASH_USER_TOKEN);
  const { workspaceId: workspace } = await call(db, "supabash_create_workspace", {
    label: "js example",
  });

  const first = await commit(db, workspace, [
    { op: "upsert", path: "/notes/hello.md", text: "hello from JavaScript\n" },
    { op: "upsert", path: "/data/blob.bin", base64: "AAECAw==" },
    // 0.6.0: kinds, modes (0o755) and times (ns) are kept; a link's text is its target.
    { op: "upsert", path: "/bin-tools/run.sh", text: "#!/bin/sh\necho hi\n", mode: 0o755 },
    { op: "upsert", path: "/latest", kind: "symlink", text: "notes/hello.md" },
    { op: "upsert", path: "/cache", kind: "directory" },
  ]);
  const second = await commit(
    db,
    workspace,
    [{ op: "upsert", path: "/notes/hello.md", text: "hello again\n", metadata: { title: "Hello" } }],
    first.revision,
  );

  const doc = await call(
    db,
    "supabash_load_document",
    { workspace_id: workspace, path: "/notes/hello.md" },
    { read: true },
  );
  assert.deepEqual(doc.metadata, { title: "Hello" });
  // Every entry shows its kind, mode and modification time (nanoseconds).
  const tree = await call(db, "supabash_load_manifest", { workspace_id: workspace }, { read: true });
  const byPath = Object.fromEntries(tree.files.map((f) => [f.path, f]));
  assert.equal(byPath["/bin-tools/run.sh"].mode, 0o755);
  assert.ok(byPath["/bin-tools/run.sh"].mtimeNs > 0);
  assert.equal(byPath["/latest"].kind, "symlink");
  assert.equal(byPath["/latest"].text, "notes/hello.md");
  assert.equal(byPath["/cache"].kind, "directory");
  // The compact form (compact => true, about half the bytes) leaves out what holds its
  // default; filled back in, it is the same tree.
  const compact = await call(db, "supabash_load_manifest", { workspace_id: workspace, compact: true }, {
    read: true,
  });
  assert.deepEqual(compact.files.map(fullFile), tree.files);
  assert.ok(doc.text.endsWith("hello again\n"));

  // History, oldest first, one receipt per page: follow nextCursor until it is null.
  const pages = [];
  let cursor = null;
  do {
    const args = { workspace_id: workspace, page_size: 1 };
    if (cursor) args.cursor = cursor;
    const page = await call(db, "supabash_history", args, { read: true });
    pages.push(page.records.map((r) => r.revision));
    cursor = page.nextCursor;
  } while (cursor);
  assert.deepEqual(pages.flat(), [first.revision, second.revision]);

  // One path's versions, newest first, and a search of the head on the server.
  const { versions } = await call(
    db,
    "supabash_path_history",
    { workspace_id: workspace, path: "/notes/hello.md" },
    { read: true },
  );
  assert.deepEqual(
    versions.map((v) => v.op),
    ["modify", "add"],
  );
  assert.equal(versions[0].revision, second.revision);
  const found = await call(
    db,
    "supabash_grep",
    { workspace_id: workspace, pattern: "again|from", context_lines: 1 },
    { read: true },
  );
  assert.deepEqual(
    found.matches.map((m) => [m.path, m.line]),
    [["/notes/hello.md", 1]],
  );
  assert.equal(found.nextCursor, null);

  // A note on the first revision after the fact (an evaluation score): no new revision; a
  // second note under the same key would be its version 2.
  const note = await call(db, "supabash_add_note", {
    workspace_id: workspace,
    revision: first.revision,
    key: "eval",
    value: { score: 0.9 },
    actor: "grader",
  });
  assert.deepEqual([note.key, note.version, note.actor], ["eval", 1, "grader"]);
  const notes = await call(
    db,
    "supabash_notes",
    { workspace_id: workspace, revision: first.revision },
    { read: true },
  );
  assert.deepEqual(
    notes.map((n) => [n.key, n.value]),
    [["eval", { score: 0.9 }]],
  );

  // A commit based on a revision that is no longer the head: 409, detail names the head.
  let head;
  try {
    await commit(db, workspace, [{ op: "delete", path: "/data/blob.bin" }], first.revision);
    assert.fail("a stale base must conflict");
  } catch (e) {
    assert.equal(e.code, "PT409");
    assert.equal(marker(e), "SUPABASH_COMMIT_CONFLICT");
    head = JSON.parse(e.details).actualRevision;
  }
  // Re-read what changed (here: nothing that matters) and commit on the real head.
  const third = await commit(db, workspace, [{ op: "delete", path: "/data/blob.bin" }], head);

  console.log(
    JSON.stringify({
      workspace,
      head: third.revision,
      position: third.position,
      historyPages: pages,
      conflictHead: head,
    }),
  );
}

const DEFAULT_MODE = { file: 0o644, symlink: 0o777, directory: 0o755 };

/** A file of a compact manifest with the fields it left out filled in (docs/sql-contract.md). */
function fullFile(f) {
  const kind = f.kind ?? "file";
  return {
    ...f,
    bodyHash: f.bodyHash ?? f.contentHash,
    bodySize: f.bodySize ?? f.size,
    metadata: f.metadata ?? {},
    kind,
    mode: f.mode ?? DEFAULT_MODE[kind],
  };
}

async function retry(workspace) {
  const db = client(process.env.SUPABASH_USER_TOKEN);
  const manifest = await call(db, "supabash_load_manifest", { workspace_id: workspace }, {
    read: true,
  });
  // The transaction id makes the retry safe: if an earlier attempt did land, the same id
  // returns its receipt ("replayed") instead of committing twice.
  const transaction = randomUUID();
  let attempts = 0;
  let delay = 200;
  let receipt;
  for (;;) {
    attempts += 1;
    try {
      receipt = await commit(
        db,
        workspace,
        [{ op: "upsert", path: "/notes/retried.md", text: "landed after a retry\n" }],
        manifest.revision,
        { transaction_id: transaction },
      );
      break;
    } catch (e) {
      // SUPABASH_COMMIT_COORDINATION (55P03, HTTP 500): the workspace lock was busy for 1 s.
      // Retryable; so are 40001 and 40P01. Anything else is not.
      if (!["55P03", "40001", "40P01"].includes(e.code) || attempts >= 10) throw e;
      await new Promise((r) => setTimeout(r, delay));
      delay = Math.min(delay * 2, 2000);
    }
  }
  console.log(
    JSON.stringify({
      workspace,
      revision: receipt.revision,
      transactionId: receipt.transactionId,
      attempts,
    }),
  );
}

async function delegated(workspace) {
  const service = client(process.env.SUPABASH_SERVICE_TOKEN);
  // Without a grant the service role sees no workspace.
  await assert.rejects(
    call(service, "supabash_load_manifest", { workspace_id: workspace }, { read: true }),
    (e) => marker(e) === "SUPABASH_WORKSPACE_DENIED",
  );

  const exchanged = await call(service, "supabash_exchange_capability", {
    capability: process.env.SUPABASH_CAPABILITY,
  });
  assert.equal(exchanged.workspaceId, workspace);
  const job = client(process.env.SUPABASH_SERVICE_TOKEN, exchanged.delegatedGrant);

  const manifest = await call(job, "supabash_load_manifest", { workspace_id: workspace }, {
    read: true,
  });
  const receipt = await commit(
    job,
    workspace,
    [{ op: "upsert", path: "/notes/from-job.md", text: "written by a delegated job\n" }],
    manifest.revision,
  );
  // A delegated commit is recorded under the grant's subject, whatever actor it sends.
  assert.ok(receipt.actor.startsWith("delegated:"));
  console.log(
    JSON.stringify({
      workspace,
      revision: receipt.revision,
      actor: receipt.actor,
      operations: exchanged.operations,
      files: manifest.files.map((f) => f.path),
    }),
  );
}

const [step, ...rest] = process.argv.slice(2);
const steps = { basics, retry, delegated };
await steps[step](...rest);
