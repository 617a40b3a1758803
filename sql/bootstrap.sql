-- supabash bootstrap for plain PostgreSQL (tests and non-Supabase installs).
-- Gives the database what Supabase already has: the PostgREST roles and the auth.* claim
-- helpers. Idempotent; run as a superuser before CREATE EXTENSION supabash.
-- On Supabase do not run this: the roles exist and are reserved.

DO $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'anon') THEN
    CREATE ROLE anon NOLOGIN NOINHERIT;
  END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'authenticated') THEN
    CREATE ROLE authenticated NOLOGIN NOINHERIT;
  END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'service_role') THEN
    CREATE ROLE service_role NOLOGIN NOINHERIT BYPASSRLS;
  END IF;
  -- PostgREST logs in as authenticator and switches to the role named by the JWT.
  -- Set its password yourself: ALTER ROLE authenticator PASSWORD '...';
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'authenticator') THEN
    CREATE ROLE authenticator LOGIN NOINHERIT;
  END IF;
END
$$;

-- The two roles a self-hosted Supabase gives every project besides the API roles, as its images
-- define them: `postgres`, the project owner's everyday role (NOSUPERUSER CREATEROLE CREATEDB
-- REPLICATION BYPASSRLS, member of pg_read_all_data), and `supabase_read_only_user` (BYPASSRLS,
-- member of pg_read_all_data). Both can read every row of every table, supabash's included, and
-- `postgres` can grant itself any non-superuser role (docs/capabilities.md, "Trust model").
-- On a cluster whose bootstrap superuser is itself named postgres (initdb -U postgres, as the
-- throwaway test clusters are), that role cannot lose SUPERUSER; the project owner's role is
-- then emulated as `supabase_project_owner`, with exactly the attributes above.
DO $$
DECLARE
  owner_role text := CASE WHEN EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'postgres' AND oid = 10)
                          THEN 'supabase_project_owner' ELSE 'postgres' END;
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = owner_role) THEN
    EXECUTE format('CREATE ROLE %I LOGIN', owner_role);
  END IF;
  EXECUTE format('ALTER ROLE %I NOSUPERUSER CREATEROLE CREATEDB REPLICATION BYPASSRLS', owner_role);
  EXECUTE format('GRANT pg_read_all_data TO %I', owner_role);
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'supabase_read_only_user') THEN
    CREATE ROLE supabase_read_only_user LOGIN BYPASSRLS;
  END IF;
  ALTER ROLE supabase_read_only_user NOSUPERUSER NOCREATEROLE BYPASSRLS;
  GRANT pg_read_all_data TO supabase_read_only_user;
END
$$;

GRANT anon, authenticated, service_role TO authenticator;
GRANT USAGE ON SCHEMA public TO anon, authenticated, service_role;

-- Supabase's images grant every new table, sequence and function in schema public to the API
-- roles through default privileges (ALTER DEFAULT PRIVILEGES FOR ROLE postgres / supabase_admin).
-- The same here, for objects created by the role running this file (the one that then runs
-- CREATE EXTENSION and ALTER EXTENSION UPDATE): an install or upgrade that forgets to take a
-- grant back leaks here as it would on Supabase, and the install check catches it.
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT ALL ON TABLES TO anon, authenticated, service_role;
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT ALL ON SEQUENCES TO anon, authenticated, service_role;
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT ALL ON FUNCTIONS TO anon, authenticated, service_role;

-- Claim helpers with the shape Supabase's auth schema provides.
CREATE SCHEMA IF NOT EXISTS auth;
GRANT USAGE ON SCHEMA auth TO anon, authenticated, service_role;

CREATE OR REPLACE FUNCTION auth.jwt() RETURNS jsonb LANGUAGE sql STABLE AS $$
  SELECT coalesce(nullif(current_setting('request.jwt.claim', true), ''),
                  nullif(current_setting('request.jwt.claims', true), ''))::jsonb
$$;

CREATE OR REPLACE FUNCTION auth.uid() RETURNS uuid LANGUAGE sql STABLE AS $$
  SELECT coalesce(nullif(current_setting('request.jwt.claim.sub', true), ''),
                  (nullif(current_setting('request.jwt.claims', true), '')::jsonb ->> 'sub'))::uuid
$$;

CREATE OR REPLACE FUNCTION auth.role() RETURNS text LANGUAGE sql STABLE AS $$
  SELECT coalesce(nullif(current_setting('request.jwt.claim.role', true), ''),
                  (nullif(current_setting('request.jwt.claims', true), '')::jsonb ->> 'role'))::text
$$;
