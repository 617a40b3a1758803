# supabash tasks. `scripts/setup.sh` installs what a fresh machine lacks.

# PG_CONFIG picks the PostgreSQL to install into and test against (default: Debian's 15). A
# private copy of /usr/lib/postgresql/15 and /usr/share/postgresql/15 under one prefix works
# too (PostgreSQL is relocatable), which lets several checkouts test side by side.
pg_config := env_var_or_default("PG_CONFIG", "/usr/lib/postgresql/15/bin/pg_config")
export PG_BIN := parent_directory(pg_config)
export PG_REGRESS := parent_directory(PG_BIN) / "lib/pgxs/src/test/regress/pg_regress"
lock := "/tmp/supabash-pgrx-install" + replace(pg_config, "/", "_") + ".lock"

# Installs the toolchain (idempotent, seconds when done).
setup:
    ./scripts/setup.sh --postrust --more-pg --examples

# Builds the extension and installs it into the system PostgreSQL (one install at a time).
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

# End-to-end tests against throwaway clusters with the installed extension.
e2e: install
    cargo test --workspace --all-features --exclude supabash-extension

# SQL scenarios (scenarios/: pg_regress, expected output) against the installed extension.
scenarios: install
    ./scenarios/run.sh

# Every test: lints, core, in-backend, end-to-end and SQL scenarios.
test: setup lint backend-tests backend-tests-more e2e scenarios

# Benchmarks of issue 2 on a throwaway cluster; writes BENCHMARKS.md (a few minutes).
bench: install
    cargo run --release -p supabash-bench

# A whole session on a throwaway local PostgreSQL: workspace, edits, commits, history, diff, restore.
demo: install
    cargo run -q -p supabash-cli -- demo
