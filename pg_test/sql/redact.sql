-- Scenario: supabash_redact(workspace_id, paths => null, body_hashes => null,
--   before_revision => null, dry_run => false, reason => null, metadata_keys => null,
--   clear_cause => false)
--
-- The versions visible before the boundary (default: the head; exclusive) at the exact paths or
-- with the body hashes become tombstones: reads of old revisions say "redacted": true and carry
-- no body. Bodies nothing references any more leave the database. The workspace's redaction
-- epoch moves: a commit must send it (null only while it is 0). A restore from before a path
-- redaction's boundary is refused. A dry run reports the same and writes nothing.
\pset tuples_only on
\pset format unaligned
\set alice '{"role":"authenticated","sub":"a11ce000-0000-4000-8000-00000000000a","aud":"authenticated"}'

-- r1 writes a secret into /key.md, r2 replaces it, r3 touches another file.
BEGIN;
SET LOCAL request.jwt.claims = :'alice';
SET LOCAL ROLE authenticated;
SELECT pgt.show(pgt.keep('ws', supabash_create_workspace(), 'workspaceId')) IS NOT NULL AS created;
SELECT pgt.keep('r1', supabash_commit(workspace_id => pgt.id('ws'), actor => 'alice', cause => 'pasted the key',
  metadata => '{"ticket": "T-1", "token": "sk-123"}',
  changes => '[{"op": "upsert", "path": "/key.md", "text": "token=sk-123"}, {"op": "upsert", "path": "/b.md", "text": "b"}]'),
  'receipt', 'revision') IS NOT NULL AS r1;
SELECT pgt.keep('r2', supabash_commit(workspace_id => pgt.id('ws'), actor => 'alice', base_revision => pgt.id('r1'),
  changes => '[{"op": "upsert", "path": "/key.md", "text": "token=removed"}]'), 'receipt', 'revision') IS NOT NULL AS r2;
SELECT pgt.keep('r3', supabash_commit(workspace_id => pgt.id('ws'), actor => 'alice', base_revision => pgt.id('r2'),
  changes => '[{"op": "upsert", "path": "/b.md", "text": "b2"}]'), 'receipt', 'revision') IS NOT NULL AS r3;
COMMIT;
SELECT count(*) AS bodies FROM supabash.bodies WHERE workspace_id = pgt.id('ws')::uuid;

-- A dry run: r1 shows the secret; one version, one body; nothing is written.
BEGIN;
SET LOCAL request.jwt.claims = :'alice';
SET LOCAL ROLE authenticated;
SELECT pgt.show(supabash_redact(workspace_id => pgt.id('ws'), paths => '{/key.md}', dry_run => true) - 'redactionId');
COMMIT;
SELECT count(*) AS bodies FROM supabash.bodies WHERE workspace_id = pgt.id('ws')::uuid;
SELECT redaction_epoch FROM supabash.workspaces WHERE id = pgt.id('ws')::uuid;

-- Applied, with the metadata key and the cause scrubbed from r1. The boundary is the head (r3),
-- so both versions of /key.md before it go: the secret [r1, r2) and the clean one from r2 up to
-- r3; the clean one keeps its content from r3 on (2 tombstones, 3 rows). To keep r2's version,
-- pass before_revision => r2.
BEGIN;
SET LOCAL request.jwt.claims = :'alice';
SET LOCAL ROLE authenticated;
SELECT pgt.show(supabash_redact(workspace_id => pgt.id('ws'), paths => '{/key.md}', reason => 'leaked key',
  metadata_keys => '{token}', clear_cause => true) - 'redactionId');
COMMIT;
SELECT count(*) AS bodies FROM supabash.bodies WHERE workspace_id = pgt.id('ws')::uuid;
SELECT count(*) FILTER (WHERE redacted) AS tombstones, count(*) AS versions FROM supabash.entries
 WHERE workspace_id = pgt.id('ws')::uuid AND path = '/key.md';
SELECT paths, hash_count, reason FROM supabash.redactions WHERE workspace_id = pgt.id('ws')::uuid;

-- Reads: r1's /key.md is a tombstone; the head's is whole; r1's metadata lost the key.
BEGIN;
SET LOCAL request.jwt.claims = :'alice';
SET LOCAL ROLE authenticated;
SELECT pgt.show(supabash_load_document(workspace_id => pgt.id('ws'), path => '/key.md', revision => pgt.id('r1'))::jsonb - 'revision');
SELECT pgt.show(supabash_load_document(workspace_id => pgt.id('ws'), path => '/key.md')::jsonb -> 'text') AS head_text;
SELECT pgt.show(supabash_history(workspace_id => pgt.id('ws'))::jsonb #> '{records,0}' -> 'metadata') AS r1_metadata;
SELECT pgt.show(supabash_history(workspace_id => pgt.id('ws'))::jsonb #> '{records,0}' -> 'cause') AS r1_cause;
SELECT pgt.show(supabash_load_manifest(workspace_id => pgt.id('ws'))::jsonb -> 'redactionEpoch') AS epoch;
-- Commits: without the epoch (or with the old one) refused; with it accepted.
SELECT pgt.try($$SELECT supabash_commit(workspace_id => pgt.id('ws'), actor => 'alice', base_revision => pgt.id('r3'),
  changes => '[{"op": "upsert", "path": "/c.md", "text": "c"}]')$$) AS no_epoch;
SELECT pgt.try($$SELECT supabash_commit(workspace_id => pgt.id('ws'), actor => 'alice', base_revision => pgt.id('r3'),
  redaction_epoch => 0, changes => '[{"op": "upsert", "path": "/c.md", "text": "c"}]')$$) AS old_epoch;
-- The fence: restoring r1 (before the boundary r3) is refused; r3 itself is allowed.
SELECT pgt.try($$SELECT supabash_commit(workspace_id => pgt.id('ws'), actor => 'alice', base_revision => pgt.id('r3'),
  redaction_epoch => 1, source_revision => pgt.id('r1'),
  changes => '[{"op": "upsert", "path": "/key.md", "text": "x"}]')$$) AS restore_r1;
SELECT supabash_commit(workspace_id => pgt.id('ws'), actor => 'alice', base_revision => pgt.id('r3'),
  redaction_epoch => 1, source_revision => pgt.id('r3'),
  changes => '[{"op": "upsert", "path": "/c.md", "text": "c"}]') -> 'receipt' ->> 'position' AS restore_r3;
-- Refused redactions.
SELECT label, pgt.try(call) FROM (VALUES
  ('no selector',     $$SELECT supabash_redact(workspace_id => pgt.id('ws'))$$),
  ('bad hash',        $$SELECT supabash_redact(workspace_id => pgt.id('ws'), body_hashes => '{abc}')$$),
  ('bad path',        $$SELECT supabash_redact(workspace_id => pgt.id('ws'), paths => '{key.md}')$$),
  ('unknown boundary', $$SELECT supabash_redact(workspace_id => pgt.id('ws'), paths => '{/b.md}', before_revision => '11111111-1111-4111-8111-111111111111')$$),
  ('current body',    $$SELECT supabash_redact(workspace_id => pgt.id('ws'), body_hashes => ARRAY[encode(sha256('c'), 'hex')])$$)
) AS t(label, call);
ROLLBACK;

-- Another user and anon get nothing.
BEGIN;
SET LOCAL request.jwt.claims = '{"role":"authenticated","sub":"b0b00000-0000-4000-8000-00000000000b","aud":"authenticated"}';
SET LOCAL ROLE authenticated;
SELECT pgt.try($$SELECT supabash_redact(workspace_id => pgt.id('ws'), paths => '{/b.md}')$$) AS other_user;
ROLLBACK;
BEGIN;
SET LOCAL ROLE anon;
SELECT pgt.try($$SELECT supabash_redact(workspace_id => pgt.id('ws'), paths => '{/b.md}')$$) AS anon;
ROLLBACK;
