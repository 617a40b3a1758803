//! PostgreSQL plumbing, below every table and every RPC: SPI statements ([`db`]), errors as
//! values ([`fail`]), request decoding ([`args`]), `json` answers ([`json_text`]), the decode
//! budget ([`budget`]), the freed heap a backend keeps ([`heap`]), interrupt checks in native loops ([`interrupt`]), the transaction's time ([`clock`]), the grant scope row-level security reads ([`scope`]), the caller's
//! claims ([`identity`]), the server key file HS256 capability secrets derive from
//! ([`key_file`]) and what the installed schema has ([`schema`]). Nothing here knows a
//! table of the extension or an RPC.

pub mod args;
pub mod budget;
pub mod clock;
pub mod db;
pub mod fail;
pub mod heap;
pub mod identity;
pub mod interrupt;
pub mod json_text;
pub mod key_file;
pub mod schema;
pub mod scope;

/// Shortens user input quoted in error messages.
pub fn clip(s: &str) -> &str {
    supabash_core::limits::utf8_prefix(s, 64)
}
