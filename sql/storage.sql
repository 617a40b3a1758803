-- supabash Storage backend setup: the private bucket and the four row-level-security policies
-- on storage.objects that confine every authenticated user to objects under their own first
-- folder (`<uid>/...`). Run as a superuser (on Supabase: in the SQL editor, as postgres).
--
-- On Supabase the storage schema, its tables, storage.foldername and RLS already exist: the
-- first block below only creates what is absent, so it changes nothing there. On plain
-- PostgreSQL (tests) it creates a minimal storage schema shaped like Supabase's, after
-- sql/bootstrap.sql has created the roles and auth.uid().
--
-- Change the bucket name `workspaces` in the bucket insert and in all four policies if you use
-- another one. Idempotent.

CREATE SCHEMA IF NOT EXISTS storage;
GRANT USAGE ON SCHEMA storage TO anon, authenticated, service_role;

CREATE TABLE IF NOT EXISTS storage.buckets (
  id text PRIMARY KEY,
  name text NOT NULL UNIQUE,
  owner uuid,
  owner_id text,
  public boolean DEFAULT false,
  avif_autodetection boolean DEFAULT false,
  file_size_limit bigint,
  allowed_mime_types text[],
  created_at timestamptz DEFAULT now(),
  updated_at timestamptz DEFAULT now()
);

CREATE TABLE IF NOT EXISTS storage.objects (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  bucket_id text REFERENCES storage.buckets (id),
  name text,
  owner uuid,
  owner_id text,
  version text,
  metadata jsonb,
  user_metadata jsonb,
  path_tokens text[] GENERATED ALWAYS AS (string_to_array(name, '/')) STORED,
  created_at timestamptz DEFAULT now(),
  updated_at timestamptz DEFAULT now(),
  last_accessed_at timestamptz DEFAULT now()
);
CREATE UNIQUE INDEX IF NOT EXISTS bucketid_objname ON storage.objects (bucket_id, name);

-- The folders of an object name: every segment but the last.
DO $$
BEGIN
  IF to_regprocedure('storage.foldername(text)') IS NULL THEN
    CREATE FUNCTION storage.foldername(name text) RETURNS text[]
      LANGUAGE sql IMMUTABLE AS
      $f$ SELECT (string_to_array(name, '/'))[1:array_length(string_to_array(name, '/'), 1) - 1] $f$;
  END IF;
END
$$;

-- Grants and RLS as Supabase has them; skipped where already in place (on Supabase the
-- tables belong to supabase_storage_admin and need no change).
DO $$
BEGIN
  IF NOT has_table_privilege('authenticated', 'storage.objects', 'SELECT,INSERT,UPDATE,DELETE') THEN
    GRANT ALL ON storage.objects TO anon, authenticated, service_role;
    GRANT ALL ON storage.buckets TO anon, authenticated, service_role;
  END IF;
  IF NOT (SELECT relrowsecurity FROM pg_class WHERE oid = 'storage.objects'::regclass) THEN
    ALTER TABLE storage.objects ENABLE ROW LEVEL SECURITY;
  END IF;
  IF NOT (SELECT relrowsecurity FROM pg_class WHERE oid = 'storage.buckets'::regclass) THEN
    ALTER TABLE storage.buckets ENABLE ROW LEVEL SECURITY;
  END IF;
END
$$;

-- The private bucket (on Supabase the CLI can create it with the service key instead).
INSERT INTO storage.buckets (id, name, public)
VALUES ('workspaces', 'workspaces', false)
ON CONFLICT (id) DO NOTHING;

-- The four policies: an authenticated user reaches only `<own uid>/...` in the bucket.
DROP POLICY IF EXISTS supabash_workspaces_select ON storage.objects;
CREATE POLICY supabash_workspaces_select ON storage.objects
  FOR SELECT TO authenticated
  USING (bucket_id = 'workspaces' AND (storage.foldername(name))[1] = auth.uid()::text);

DROP POLICY IF EXISTS supabash_workspaces_insert ON storage.objects;
CREATE POLICY supabash_workspaces_insert ON storage.objects
  FOR INSERT TO authenticated
  WITH CHECK (bucket_id = 'workspaces' AND (storage.foldername(name))[1] = auth.uid()::text);

DROP POLICY IF EXISTS supabash_workspaces_update ON storage.objects;
CREATE POLICY supabash_workspaces_update ON storage.objects
  FOR UPDATE TO authenticated
  USING (bucket_id = 'workspaces' AND (storage.foldername(name))[1] = auth.uid()::text)
  WITH CHECK (bucket_id = 'workspaces' AND (storage.foldername(name))[1] = auth.uid()::text);

DROP POLICY IF EXISTS supabash_workspaces_delete ON storage.objects;
CREATE POLICY supabash_workspaces_delete ON storage.objects
  FOR DELETE TO authenticated
  USING (bucket_id = 'workspaces' AND (storage.foldername(name))[1] = auth.uid()::text);
