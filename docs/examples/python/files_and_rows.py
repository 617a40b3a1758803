"""Files and application rows in one PostgreSQL transaction, from Python (psycopg 3).

A direct connection (not PostgREST, which runs each RPC in a transaction of its own) commits a
workspace change and a row of the application's own `tasks` table that names the new revision,
in one transaction: both land or neither does. Run by tests/tests/examples.rs as

  files_and_rows.py WORKSPACE

against a real database: a first attempt is rolled back (no revision, no task row, and no lock
left behind: another connection commits at once), then the same transaction id commits both.

Environment: SUPABASH_DB_URL (a postgres:// URL for a login role that may become
`authenticated`, like Supabase's `authenticator`), SUPABASH_USER_TOKEN (the user's access
token: its claims are what the transaction runs as). The table, created by the application:

  CREATE TABLE public.tasks (id bigserial PRIMARY KEY, workspace_id uuid NOT NULL,
                             revision uuid NOT NULL, title text NOT NULL);
  GRANT SELECT, INSERT ON public.tasks TO authenticated;
  GRANT USAGE ON SEQUENCE public.tasks_id_seq TO authenticated;

Prints one JSON object.
"""

import base64
import json
import os
import sys
import uuid

import psycopg
from psycopg.types.json import Json


def claims(token):
    """The claims of an access token (its payload; the database trusts the login role)."""
    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


def as_user(cur, user_claims):
    """Acts as the user for the rest of this transaction (both settings end with it)."""
    cur.execute("SELECT set_config('request.jwt.claims', %s, true)", [json.dumps(user_claims)])
    cur.execute("SET LOCAL ROLE authenticated")


def supabash_locks(cur):
    """Locks this connection holds on supabash's tables (the commit's, until the transaction ends)."""
    cur.execute("""SELECT count(*) FROM pg_locks l
                     JOIN pg_class c ON c.oid = l.relation
                     JOIN pg_namespace n ON n.oid = c.relnamespace
                    WHERE l.pid = pg_backend_pid() AND n.nspname = 'supabash'""")
    return cur.fetchone()[0]


def commit_with_task(conn, user_claims, workspace, base, transaction_id, title):
    """Opens a transaction, commits a file and inserts the task row naming the revision; the
    caller ends the transaction. Returns the revision and the locks held meanwhile."""
    cur = conn.cursor()
    as_user(cur, user_claims)
    cur.execute(
        "SELECT supabash_commit(workspace_id => %s, changes => %s, actor => 'python-tasks',"
        " base_revision => %s, transaction_id => %s)",
        [workspace, Json([{"op": "upsert", "path": "/task.md", "text": title + "\n"}]),
         base, transaction_id])
    receipt = cur.fetchone()[0]
    assert receipt["replayed"] is False, receipt
    revision = receipt["receipt"]["revision"]
    # The receipt is known inside the transaction: the row can name the revision.
    cur.execute("INSERT INTO public.tasks (workspace_id, revision, title) VALUES (%s, %s, %s)",
                [workspace, revision, title])
    return revision, supabash_locks(cur)


def head_and_tasks(conn, user_claims, workspace):
    """The head revision and the task rows of the workspace, read in a transaction of their own."""
    with conn.transaction():
        cur = conn.cursor()
        as_user(cur, user_claims)
        cur.execute("SELECT supabash_load_manifest(workspace_id => %s)", [workspace])
        head = cur.fetchone()[0]["revision"]
        cur.execute("SELECT revision::text FROM public.tasks WHERE workspace_id = %s"
                    " ORDER BY id", [workspace])
        return head, [r[0] for r in cur.fetchall()]


def main(workspace):
    user = claims(os.environ["SUPABASH_USER_TOKEN"])
    url = os.environ["SUPABASH_DB_URL"]
    with psycopg.connect(url) as first, psycopg.connect(url) as other:
        base, _ = head_and_tasks(first, user, workspace)
        # Chosen once: a retry of the same change carries it.
        transaction_id = str(uuid.uuid4())

        # Attempt 1, rolled back: neither the revision nor the row stays, no lock is left.
        rolled_back, locks_during = commit_with_task(
            first, user, workspace, base, transaction_id, "draft review")
        first.rollback()
        locks_after = supabash_locks(first.cursor())
        first.rollback()
        head, tasks = head_and_tasks(first, user, workspace)
        assert head == base and tasks == [], (head, tasks)
        # While `first` stays open, another connection commits at once: nothing holds the
        # workspace (a lock left behind would make it wait 1 s and fail with 55P03).
        free, _ = commit_with_task(other, user, workspace, base, str(uuid.uuid4()), "unrelated")
        other.rollback()

        # Attempt 2, the same transaction id (not spent by the rollback): both land.
        committed, _ = commit_with_task(
            first, user, workspace, base, transaction_id, "review")
        first.commit()
        head, tasks = head_and_tasks(first, user, workspace)
        assert head == committed and tasks == [committed], (head, tasks)

    print(json.dumps({"workspace": workspace, "base": base, "rolledBack": rolled_back,
                      "locksDuring": locks_during, "locksAfterRollback": locks_after,
                      "otherCommit": free, "committed": committed,
                      "tasks": tasks, "transactionId": transaction_id}))


if __name__ == "__main__":
    main(*sys.argv[1:])
