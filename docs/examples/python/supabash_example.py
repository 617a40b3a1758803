"""supabash from Python, over PostgREST, with the PostgREST client of supabase-py (`postgrest`).

Three steps, each a subcommand, run in this order by tests/tests/examples.rs against a real
database with the extension and the PostgREST stand-in:

  basics                  as a user: create a workspace, commit, read a document, page history,
                          handle a 409 conflict
  retry WORKSPACE         as the user: a commit that meets a retryable coordination error
                          (55P03) is retried with the same transaction id until it lands
  delegated WORKSPACE     as service_role: exchange a delegated capability for a grant, then
                          read and commit with it

Environment: SUPABASH_REST_URL (https://<project>.supabase.co/rest/v1), SUPABASH_APIKEY (the
publishable key, sent as `apikey`), SUPABASH_USER_TOKEN (a user's access token),
SUPABASH_SERVICE_TOKEN (the service-role key) and, for `delegated`, SUPABASH_CAPABILITY (a token
the host's issuer signed; see docs/capabilities.md). Each step prints one JSON object.
"""

import json
import os
import sys
import time
import uuid

from postgrest import SyncPostgrestClient
from postgrest.exceptions import APIError

REST_URL = os.environ["SUPABASH_REST_URL"]
APIKEY = os.environ.get("SUPABASH_APIKEY", "")


def client(token, grant=None):
    """A PostgREST client acting with `token`; a delegated grant travels in its own header."""
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    if APIKEY:
        headers["apikey"] = APIKEY
    if grant:
        # Never in the URL: read RPCs go over GET, and query strings end up in logs.
        headers["X-Supabash-Grant"] = grant
    return SyncPostgrestClient(REST_URL, headers=headers)


def call(db, name, args=None, read=False):
    """Calls RPC `name`; reads (STABLE RPCs) go over GET so a read replica can serve them."""
    return db.rpc(name, args or {}, get=read).execute().data


def marker(error):
    """The supabash error marker that starts the message, e.g. SUPABASH_COMMIT_CONFLICT."""
    return (error.message or "").split(":")[0]


def commit(db, workspace, changes, base, **extra):
    args = {"workspace_id": workspace, "changes": changes, "actor": "python-example"}
    if base is not None:
        args["base_revision"] = base
    args.update(extra)
    return call(db, "supabash_commit", args)["receipt"]


def basics():
    db = client(os.environ["SUPABASH_USER_TOKEN"])
    workspace = call(db, "supabash_create_workspace", {"label": "python example"})["workspaceId"]

    first = commit(db, workspace, [
        {"op": "upsert", "path": "/notes/hello.md", "text": "hello from Python\n"},
        {"op": "upsert", "path": "/data/blob.bin", "base64": "AAECAw=="},
        # 0.6.0: kinds, modes (0o755 = 493) and times (ns) are kept; a link's text is its target.
        {"op": "upsert", "path": "/bin-tools/run.sh", "text": "#!/bin/sh\necho hi\n", "mode": 493},
        {"op": "upsert", "path": "/latest", "kind": "symlink", "text": "notes/hello.md"},
        {"op": "upsert", "path": "/cache", "kind": "directory"},
    ], None)
    second = commit(db, workspace, [
        {"op": "upsert", "path": "/notes/hello.md", "text": "hello again\n",
         "metadata": {"title": "Hello"}},
    ], first["revision"])

    doc = call(db, "supabash_load_document",
               {"workspace_id": workspace, "path": "/notes/hello.md"}, read=True)
    assert doc["metadata"] == {"title": "Hello"}, doc
    assert doc["text"].endswith("hello again\n"), doc

    # Every entry shows its kind, mode and modification time (nanoseconds).
    tree = call(db, "supabash_load_manifest", {"workspace_id": workspace}, read=True)
    by_path = {f["path"]: f for f in tree["files"]}
    assert by_path["/bin-tools/run.sh"]["mode"] == 0o755 and by_path["/bin-tools/run.sh"]["mtimeNs"] > 0
    assert by_path["/latest"]["kind"] == "symlink" and by_path["/latest"]["text"] == "notes/hello.md"
    assert by_path["/cache"]["kind"] == "directory", by_path
    # The compact form (compact => true, about half the bytes) leaves out what holds its
    # default; filled back in, it is the same tree.
    compact = call(db, "supabash_load_manifest", {"workspace_id": workspace, "compact": True}, read=True)
    assert [full_file(f) for f in compact["files"]] == tree["files"], compact

    # History, oldest first, one receipt per page: follow nextCursor until it is null.
    pages, cursor = [], None
    while True:
        args = {"workspace_id": workspace, "page_size": 1}
        if cursor:
            args["cursor"] = cursor
        page = call(db, "supabash_history", args, read=True)
        pages.append([r["revision"] for r in page["records"]])
        cursor = page["nextCursor"]
        if cursor is None:
            break
    assert [p for page in pages for p in page] == [first["revision"], second["revision"]], pages

    # One path's versions, newest first, and a search of the head on the server.
    versions = call(db, "supabash_path_history",
                    {"workspace_id": workspace, "path": "/notes/hello.md"}, read=True)["versions"]
    assert [v["op"] for v in versions] == ["modify", "add"], versions
    assert versions[0]["revision"] == second["revision"], versions
    found = call(db, "supabash_grep", {"workspace_id": workspace, "pattern": "again|from",
                                       "context_lines": 1}, read=True)
    assert [(m["path"], m["line"]) for m in found["matches"]] == [("/notes/hello.md", 1)], found
    assert found["nextCursor"] is None, found

    # A note on the first revision after the fact (an evaluation score): no new revision; a
    # second note under the same key would be its version 2.
    note = call(db, "supabash_add_note", {"workspace_id": workspace, "revision": first["revision"],
                                          "key": "eval", "value": {"score": 0.9}, "actor": "grader"})
    assert (note["key"], note["version"], note["actor"]) == ("eval", 1, "grader"), note
    notes = call(db, "supabash_notes", {"workspace_id": workspace, "revision": first["revision"]},
                 read=True)
    assert [(n["key"], n["value"]) for n in notes] == [("eval", {"score": 0.9})], notes

    # A commit based on a revision that is no longer the head: 409, detail names the head.
    try:
        commit(db, workspace, [{"op": "delete", "path": "/data/blob.bin"}], first["revision"])
        raise AssertionError("a stale base must conflict")
    except APIError as e:
        assert e.code == "PT409" and marker(e) == "SUPABASH_COMMIT_CONFLICT", e.json()
        detail = json.loads(e.details) if isinstance(e.details, str) else e.details
        head = detail["actualRevision"]
    # Re-read what changed (here: nothing that matters) and commit on the real head.
    third = commit(db, workspace, [{"op": "delete", "path": "/data/blob.bin"}], head)

    print(json.dumps({"workspace": workspace, "head": third["revision"],
                      "position": third["position"], "historyPages": pages, "conflictHead": head}))


DEFAULT_MODE = {"file": 0o644, "symlink": 0o777, "directory": 0o755}


def full_file(f):
    """A file of a compact manifest with the fields it left out filled in (docs/sql-contract.md)."""
    kind = f.get("kind", "file")
    return {**f, "bodyHash": f.get("bodyHash", f["contentHash"]), "bodySize": f.get("bodySize", f["size"]),
            "metadata": f.get("metadata", {}), "kind": kind, "mode": f.get("mode", DEFAULT_MODE[kind])}


def retry(workspace):
    db = client(os.environ["SUPABASH_USER_TOKEN"])
    head = call(db, "supabash_load_manifest", {"workspace_id": workspace}, read=True)["revision"]
    # The transaction id makes the retry safe: if an earlier attempt did land, the same id
    # returns its receipt ("replayed") instead of committing twice.
    transaction = str(uuid.uuid4())
    attempts, delay = 0, 0.2
    while True:
        attempts += 1
        try:
            receipt = commit(db, workspace, [
                {"op": "upsert", "path": "/notes/retried.md", "text": "landed after a retry\n"},
            ], head, transaction_id=transaction)
            break
        except APIError as e:
            # SUPABASH_COMMIT_COORDINATION (55P03, HTTP 500): the workspace lock was busy for
            # 1 s. Retryable; so are 40001 and 40P01. Anything else is not.
            if e.code not in ("55P03", "40001", "40P01") or attempts >= 10:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 2.0)
    print(json.dumps({"workspace": workspace, "revision": receipt["revision"],
                      "transactionId": receipt["transactionId"], "attempts": attempts}))


def delegated(workspace):
    service = client(os.environ["SUPABASH_SERVICE_TOKEN"])
    # Without a grant the service role sees no workspace.
    try:
        call(service, "supabash_load_manifest", {"workspace_id": workspace}, read=True)
        raise AssertionError("service_role without a grant must be denied")
    except APIError as e:
        assert marker(e) == "SUPABASH_WORKSPACE_DENIED", e.json()

    exchanged = call(service, "supabash_exchange_capability",
                     {"capability": os.environ["SUPABASH_CAPABILITY"]})
    assert exchanged["workspaceId"] == workspace, exchanged
    job = client(os.environ["SUPABASH_SERVICE_TOKEN"], grant=exchanged["delegatedGrant"])

    manifest = call(job, "supabash_load_manifest", {"workspace_id": workspace}, read=True)
    receipt = commit(job, workspace, [
        {"op": "upsert", "path": "/notes/from-job.md", "text": "written by a delegated job\n"},
    ], manifest["revision"])
    # A delegated commit is recorded under the grant's subject, whatever actor it sends.
    assert receipt["actor"].startswith("delegated:"), receipt
    print(json.dumps({"workspace": workspace, "revision": receipt["revision"],
                      "actor": receipt["actor"], "operations": exchanged["operations"],
                      "files": [f["path"] for f in manifest["files"]]}))


if __name__ == "__main__":
    step, rest = sys.argv[1], sys.argv[2:]
    {"basics": basics, "retry": retry, "delegated": delegated}[step](*rest)
