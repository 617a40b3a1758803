-- Test-only helpers for the pg_test/ scenarios (schema pgt). run.sh loads this file into the
-- throwaway database after CREATE EXTENSION supabash; it is never part of an install.
--
--   pgt.keep(name, result, path...)  remembers the id found at `path` in an RPC result under
--                                   `name` and returns the result unchanged
--   pgt.id(name)                    the id remembered under `name` (text, as the RPCs take it)
--   pgt.show(result)                the result as pretty JSON with generated values masked:
--                                   remembered ids print as "<name>", other UUIDs as "<uuid>",
--                                   timestamps as "<time>" and commit positions as "<position>"
--   pgt.try(sql)                    runs `sql` (one jsonb value) as the current role and prints
--                                   either pgt.show(result) or "SQLSTATE: message" (+ detail)
--
-- Everything here runs with the caller's privileges (SECURITY INVOKER), so a call made through
-- pgt.try is exactly the call PostgREST would make in the same transaction.

CREATE SCHEMA pgt;
GRANT USAGE ON SCHEMA pgt TO PUBLIC;

CREATE TABLE pgt.names (name text PRIMARY KEY, id text NOT NULL);
GRANT SELECT, INSERT, UPDATE ON pgt.names TO PUBLIC;

CREATE FUNCTION pgt.keep(name text, result jsonb, VARIADIC path text[]) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE v text := result #>> path;
BEGIN
  IF v IS NULL THEN
    RAISE EXCEPTION 'pgt.keep: nothing at % in %', path, result;
  END IF;
  INSERT INTO pgt.names VALUES (name, v) ON CONFLICT ON CONSTRAINT names_pkey DO UPDATE SET id = EXCLUDED.id;
  RETURN result;
END
$$;

CREATE FUNCTION pgt.id(name text) RETURNS text
LANGUAGE plpgsql VOLATILE AS $$
DECLARE v text;
BEGIN
  SELECT n.id INTO v FROM pgt.names n WHERE n.name = id.name;
  IF v IS NULL THEN
    RAISE EXCEPTION 'pgt.id: no id remembered as %', name;
  END IF;
  RETURN v;
END
$$;

-- Replaces every UUID in a text by its remembered name or <uuid>.
CREATE FUNCTION pgt.mask_text(t text) RETURNS text
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  m text;
  n text;
BEGIN
  IF t IS NULL THEN
    RETURN NULL;
  END IF;
  FOR m IN SELECT DISTINCT x[1] FROM regexp_matches(t,
      '([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})', 'gi') AS x LOOP
    SELECT '<' || name || '>' INTO n FROM pgt.names WHERE lower(id) = lower(m) ORDER BY name LIMIT 1;
    t := replace(t, m, coalesce(n, '<uuid>'));
  END LOOP;
  RETURN regexp_replace(t, '\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d(:\d\d)?)?', '<time>', 'g');
END
$$;

CREATE FUNCTION pgt.mask(j jsonb) RETURNS jsonb
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  CASE jsonb_typeof(j)
    WHEN 'object' THEN
      RETURN coalesce((SELECT jsonb_object_agg(k,
                         CASE WHEN k IN ('position', 'headPosition') AND jsonb_typeof(v) = 'number'
                              THEN '"<position>"'::jsonb
                              WHEN k = 'mtimeNs' AND jsonb_typeof(v) = 'number'
                              THEN '"<mtime>"'::jsonb ELSE pgt.mask(v) END)
                         FROM jsonb_each(j) AS e(k, v)), '{}'::jsonb);
    WHEN 'array' THEN
      RETURN coalesce((SELECT jsonb_agg(pgt.mask(v) ORDER BY i)
                         FROM jsonb_array_elements(j) WITH ORDINALITY AS e(v, i)), '[]'::jsonb);
    WHEN 'string' THEN
      RETURN to_jsonb(pgt.mask_text(j #>> '{}'));
    ELSE
      RETURN j;
  END CASE;
END
$$;

CREATE FUNCTION pgt.show(result jsonb) RETURNS text
LANGUAGE sql VOLATILE AS $$
  SELECT jsonb_pretty(pgt.mask(result))
$$;

CREATE FUNCTION pgt.try(sql text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
  r jsonb;
  st text;
  msg text;
  det text;
BEGIN
  EXECUTE sql INTO r;
  RETURN pgt.show(r);
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT, det = PG_EXCEPTION_DETAIL;
  RETURN st || ': ' || pgt.mask_text(msg)
         || CASE WHEN coalesce(det, '') <> '' THEN E'\n  detail: ' || pgt.mask_text(det) ELSE '' END;
END
$$;

-- Capability tokens are signed outside SQL (pg_test/sign.sh); SQL builds what they sign:
--   pgt.b64url(bytes)                     unpadded base64url
CREATE FUNCTION pgt.b64url(b bytea) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
  SELECT rtrim(translate(replace(encode(b, 'base64'), E'\n', ''), '+/', '-_'), '=')
$$;
