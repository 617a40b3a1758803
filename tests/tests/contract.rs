//! The SQL functions and the contract in `supabash_core::rpc` agree: every public `supabash_*`
//! function of the installed extension has a request type with the same parameter names in
//! the same order, exactly its defaulted parameters are `Option`s, and it is VOLATILE exactly
//! when the contract says it mutates (a lost answer to it leaves the outcome unknown).

use std::collections::BTreeMap;
use supabash_core::rpc::{catalog, Param};
use supabash_tests::Cluster;
use tokio_postgres::NoTls;

/// What `pg_proc` says of one function.
#[derive(Debug)]
struct SqlFunction {
    args: Vec<String>,
    defaults: usize,
    volatile: bool,
}

async fn sql_functions() -> BTreeMap<String, SqlFunction> {
    let cluster = Cluster::shared();
    let (db, conn) = tokio_postgres::connect(&cluster.dsn("postgres"), NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    let rows = db
        .query(
            "SELECT p.proname::text, coalesce(p.proargnames, '{}')::text[], p.pronargs::int,
                    p.pronargdefaults::int, p.provolatile = 'v'
               FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid AND d.deptype = 'e'
               JOIN pg_extension x ON x.oid = d.refobjid AND x.extname = 'supabash'
              WHERE p.pronamespace = 'public'::regnamespace",
            &[],
        )
        .await
        .unwrap();
    rows.iter()
        .map(|r| {
            let mut args: Vec<String> = r.get(1);
            args.truncate(r.get::<_, i32>(2) as usize);
            let f = SqlFunction {
                args,
                defaults: r.get::<_, i32>(3) as usize,
                volatile: r.get(4),
            };
            (r.get(0), f)
        })
        .collect()
}

#[tokio::test]
async fn every_sql_signature_matches_its_request_type() {
    let sql = sql_functions().await;
    let contract: BTreeMap<&str, Vec<Param>> =
        catalog().into_iter().map(|r| (r.name, r.params)).collect();
    let sql_names: Vec<&str> = sql.keys().map(String::as_str).collect();
    let contract_names: Vec<&str> = contract.keys().copied().collect();
    assert_eq!(sql_names, contract_names, "public functions vs contract");
    for (name, params) in &contract {
        let f = &sql[*name];
        let names: Vec<&str> = params.iter().map(|p| p.name).collect();
        assert_eq!(f.args, names, "{name}: argument names and order");
        // SQL defaults are trailing: the last `defaults` parameters, and only they, are
        // optional in the request type.
        let optional: Vec<bool> = params.iter().map(|p| p.optional).collect();
        let expected: Vec<bool> = (0..params.len())
            .map(|i| i >= params.len() - f.defaults)
            .collect();
        assert_eq!(optional, expected, "{name}: defaults vs Option fields");
    }
}

#[tokio::test]
async fn exactly_the_volatile_functions_mutate() {
    let sql = sql_functions().await;
    for rpc in catalog() {
        assert_eq!(
            sql[rpc.name].volatile, rpc.mutates,
            "{}: VOLATILE in SQL vs MUTATES in the contract",
            rpc.name
        );
    }
    assert!(catalog()
        .iter()
        .any(|r| r.name == "supabash_exchange_capability" && r.mutates));
}
