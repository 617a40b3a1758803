// Files and application rows in one PostgreSQL transaction, from Node (node-postgres, `pg`).
//
// A direct connection (not PostgREST, which runs each RPC in a transaction of its own) commits a
// workspace change and a row of the application's own `tasks` table that names the new
// revision, in one transaction: both land or neither does. Run by tests/tests/examples.rs as
//
//   node files_and_rows.mjs WORKSPACE
//
// against a real database: a first attempt is rolled back (no revision, no task row, and no
// lock left behind: another connection commits at once), then the same transaction id commits
// both.
//
// Environment: SUPABASH_DB_URL (a postgres:// URL for a login role that may become
// `authenticated`, like Supabase's `authenticator`), SUPABASH_USER_TOKEN (the user's access
// token: its claims are what the transaction runs as). The table is the one
// docs/examples/python/files_and_rows.py describes. Prints one JSON object.

import { randomUUID } from "node:crypto";
import pg from "pg";

/** The claims of an access token (its payload; the database trusts the login role). */
function claims(token) {
  return JSON.parse(Buffer.from(token.split(".")[1], "base64url").toString("utf8"));
}

/** Acts as the user for the rest of this transaction (both settings end with it). */
async function asUser(db, userClaims) {
  await db.query("SELECT set_config('request.jwt.claims', $1, true)", [JSON.stringify(userClaims)]);
  await db.query("SET LOCAL ROLE authenticated");
}

/** Locks this connection holds on supabash's tables (the commit's, until the transaction ends). */
async function supabashLocks(db) {
  const { rows } = await db.query(
    `SELECT count(*)::int AS n FROM pg_locks l
       JOIN pg_class c ON c.oid = l.relation
       JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE l.pid = pg_backend_pid() AND n.nspname = 'supabash'`);
  return rows[0].n;
}

/** Opens a transaction, commits a file and inserts the task row naming the revision; the caller
 * ends the transaction. Returns the revision and the locks held meanwhile. */
async function commitWithTask(db, userClaims, workspace, base, transactionId, title) {
  await db.query("BEGIN");
  await asUser(db, userClaims);
  const { rows } = await db.query(
    `SELECT supabash_commit(workspace_id => $1, changes => $2::json, actor => 'js-tasks',
                            base_revision => $3, transaction_id => $4) AS r`,
    [workspace, JSON.stringify([{ op: "upsert", path: "/task.md", text: `${title}\n` }]),
     base, transactionId]);
  const receipt = rows[0].r;
  if (receipt.replayed !== false) throw new Error(`a fresh commit: ${JSON.stringify(receipt)}`);
  const revision = receipt.receipt.revision;
  // The receipt is known inside the transaction: the row can name the revision.
  await db.query("INSERT INTO public.tasks (workspace_id, revision, title) VALUES ($1, $2, $3)",
                 [workspace, revision, title]);
  return { revision, locks: await supabashLocks(db) };
}

/** The head revision and the task rows of the workspace, read in a transaction of their own. */
async function headAndTasks(db, userClaims, workspace) {
  await db.query("BEGIN");
  try {
    await asUser(db, userClaims);
    const head = await db.query("SELECT supabash_load_manifest(workspace_id => $1) AS m",
                                [workspace]);
    const tasks = await db.query(
      "SELECT revision::text AS r FROM public.tasks WHERE workspace_id = $1 ORDER BY id",
      [workspace]);
    return { head: head.rows[0].m.revision, tasks: tasks.rows.map((t) => t.r) };
  } finally {
    await db.query("COMMIT");
  }
}

function check(ok, what) {
  if (!ok) throw new Error(what);
}

async function main(workspace) {
  const user = claims(process.env.SUPABASH_USER_TOKEN);
  const first = new pg.Client({ connectionString: process.env.SUPABASH_DB_URL });
  const other = new pg.Client({ connectionString: process.env.SUPABASH_DB_URL });
  await first.connect();
  await other.connect();
  try {
    const { head: base } = await headAndTasks(first, user, workspace);
    // Chosen once: a retry of the same change carries it.
    const transactionId = randomUUID();

    // Attempt 1, rolled back: neither the revision nor the row stays, no lock is left.
    const rolledBack = await commitWithTask(first, user, workspace, base, transactionId,
                                            "draft review");
    await first.query("ROLLBACK");
    const locksAfter = await supabashLocks(first);
    let now = await headAndTasks(first, user, workspace);
    check(now.head === base && now.tasks.length === 0, `rolled back: ${JSON.stringify(now)}`);
    // While `first` stays open, another connection commits at once: nothing holds the
    // workspace (a lock left behind would make it wait 1 s and fail with 55P03).
    const free = await commitWithTask(other, user, workspace, base, randomUUID(), "unrelated");
    await other.query("ROLLBACK");

    // Attempt 2, the same transaction id (not spent by the rollback): both land.
    const committed = await commitWithTask(first, user, workspace, base, transactionId, "review");
    await first.query("COMMIT");
    now = await headAndTasks(first, user, workspace);
    check(now.head === committed.revision && now.tasks.length === 1
          && now.tasks[0] === committed.revision, `committed: ${JSON.stringify(now)}`);

    console.log(JSON.stringify({
      workspace, base, rolledBack: rolledBack.revision, locksDuring: rolledBack.locks,
      locksAfterRollback: locksAfter, otherCommit: free.revision,
      committed: committed.revision, tasks: now.tasks, transactionId,
    }));
  } finally {
    await first.end();
    await other.end();
  }
}

await main(process.argv[2]);
