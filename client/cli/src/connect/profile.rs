//! Named connection profiles from a TOML config file: `$SUPABASH_CONFIG`, else
//! `$XDG_CONFIG_HOME/supabash/config.toml`, else `~/.config/supabash/config.toml`.
//!
//! ```toml
//! default_profile = "local"
//!
//! [profiles.local]
//! dsn_file = "~/.config/supabash/local.dsn"   # or dsn = "host=... user=authenticator"
//! sub = "8d0f...-..."
//! workspace = "1c2e...-..."
//!
//! [profiles.prod]
//! url = "https://<project>.supabase.co/rest/v1"
//! token_file = "/run/secrets/supabase-token"
//! apikey_file = "/run/secrets/supabase-apikey"
//! ```
//!
//! A secret (`dsn`, `token`, `apikey`, `admin_dsn`) may be given inline or as a `*_file` key
//! naming a file that holds it (a trailing newline is dropped).

use crate::exit::{hide, usage};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The config file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfigFile {
    /// The profile used when none is named.
    default_profile: Option<String>,
    #[serde(default)]
    profiles: BTreeMap<String, Profile>,
}

/// One profile: every key is optional; flags and environment variables win over it.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// Direct Postgres connection string (acting as `sub`).
    pub dsn: Option<String>,
    pub dsn_file: Option<PathBuf>,
    pub sub: Option<String>,
    /// PostgREST base URL.
    pub url: Option<String>,
    pub token: Option<String>,
    pub token_file: Option<PathBuf>,
    pub apikey: Option<String>,
    pub apikey_file: Option<PathBuf>,
    /// The workspace commands act on when `--workspace` is not given.
    pub workspace: Option<String>,
    /// A connection string of the database owner (`supabash verifier ...`).
    pub admin_dsn: Option<String>,
    pub admin_dsn_file: Option<PathBuf>,
}

impl Profile {
    /// The direct connection string, inline or from its file.
    pub fn dsn(&self) -> Result<Option<String>, BoxError> {
        secret(&self.dsn, &self.dsn_file)
    }

    /// The access token, inline or from its file.
    pub fn token(&self) -> Result<Option<String>, BoxError> {
        secret(&self.token, &self.token_file)
    }

    /// The publishable key, inline or from its file.
    pub fn apikey(&self) -> Result<Option<String>, BoxError> {
        secret(&self.apikey, &self.apikey_file)
    }

    /// The database owner's connection string, inline or from its file.
    pub fn admin_dsn(&self) -> Result<Option<String>, BoxError> {
        secret(&self.admin_dsn, &self.admin_dsn_file)
    }
}

/// An inline secret, else the content of its file; remembered so no report shows it.
pub fn secret(inline: &Option<String>, file: &Option<PathBuf>) -> Result<Option<String>, BoxError> {
    let value = match (inline, file) {
        (Some(v), _) => Some(v.clone()),
        (None, Some(path)) => Some(read_secret(path)?),
        (None, None) => None,
    };
    if let Some(v) = &value {
        hide(v);
    }
    Ok(value)
}

/// The secret a file holds, without its trailing newline.
pub fn read_secret(path: &Path) -> Result<String, BoxError> {
    let path = expand(path);
    let text = std::fs::read_to_string(&path)
        .map_err(|e| usage(format!("cannot read secret file {}: {e}", path.display())))?;
    Ok(text.trim_end_matches(['\n', '\r']).to_owned())
}

/// `~/x` as `$HOME/x`.
fn expand(path: &Path) -> PathBuf {
    match (path.strip_prefix("~"), std::env::var_os("HOME")) {
        (Ok(rest), Some(home)) => Path::new(&home).join(rest),
        _ => path.to_path_buf(),
    }
}

/// Where the config file is: `explicit` (`--config`), `$SUPABASH_CONFIG`, then the XDG place.
pub fn config_path(explicit: Option<&Path>) -> Option<PathBuf> {
    if let Some(p) = explicit {
        return Some(expand(p));
    }
    if let Some(p) = std::env::var_os("SUPABASH_CONFIG") {
        return Some(expand(Path::new(&p)));
    }
    let base = match std::env::var_os("XDG_CONFIG_HOME") {
        Some(x) if !x.is_empty() => PathBuf::from(x),
        _ => Path::new(&std::env::var_os("HOME")?).join(".config"),
    };
    Some(base.join("supabash").join("config.toml"))
}

/// The profile `name` (default: the file's `default_profile`, else one named `default`, else
/// none) of the config file at `path`. A missing file is an empty profile unless a profile was
/// named; a named profile the file lacks is a usage error.
pub fn load(path: Option<&Path>, name: Option<&str>) -> Result<Profile, BoxError> {
    let Some(path) = path else {
        return match name {
            Some(n) => Err(usage(format!(
                "profile {n:?}: no config file (set HOME or SUPABASH_CONFIG)"
            ))),
            None => Ok(Profile::default()),
        };
    };
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && name.is_none() => {
            return Ok(Profile::default())
        }
        Err(e) => {
            return Err(usage(format!(
                "cannot read config file {}: {e}",
                path.display()
            )))
        }
    };
    let file = parse(&text).map_err(|e| usage(format!("config file {}: {e}", path.display())))?;
    let chosen = name
        .map(str::to_owned)
        .or(file.default_profile.clone())
        .or_else(|| {
            file.profiles
                .contains_key("default")
                .then(|| "default".into())
        });
    match chosen {
        None => Ok(Profile::default()),
        Some(n) => file.profiles.get(&n).cloned().ok_or_else(|| {
            usage(format!(
                "no profile {n:?} in {} (it has: {})",
                path.display(),
                file.profiles.keys().cloned().collect::<Vec<_>>().join(", ")
            ))
        }),
    }
}

/// Parses the file; an error names the line and the problem, never the text there (it may
/// hold a secret).
fn parse(text: &str) -> Result<ConfigFile, String> {
    toml::from_str(text).map_err(|e| {
        let line = e
            .span()
            .map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1);
        match line {
            Some(l) => format!("line {l}: {}", e.message()),
            None => e.message().to_owned(),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_are_chosen_by_name_then_default() {
        let dir = std::env::temp_dir().join(format!("supabash-profile-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let token = dir.join("token");
        std::fs::write(&token, "tok-from-file\n").unwrap();
        let cfg = dir.join("config.toml");
        std::fs::write(
            &cfg,
            format!(
                "default_profile = \"a\"\n[profiles.a]\nsub = \"u1\"\n[profiles.b]\nurl = \"http://x\"\ntoken_file = {:?}\n",
                token.display().to_string()
            ),
        )
        .unwrap();
        assert_eq!(load(Some(&cfg), None).unwrap().sub.as_deref(), Some("u1"));
        let b = load(Some(&cfg), Some("b")).unwrap();
        assert_eq!(b.token().unwrap().as_deref(), Some("tok-from-file"));
        let missing = load(Some(&cfg), Some("c")).unwrap_err().to_string();
        assert!(
            missing.contains("\"c\"") && missing.contains("a, b"),
            "{missing}"
        );
        assert!(load(Some(&dir.join("absent.toml")), None)
            .unwrap()
            .sub
            .is_none());
        assert!(load(Some(&dir.join("absent.toml")), Some("a")).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_parse_error_never_quotes_the_file() {
        let e = parse("[profiles.a]\ntoken = \"sk-secret-unterminated\n").unwrap_err();
        assert!(e.starts_with("line 2"), "{e}");
        assert!(!e.contains("sk-secret"), "{e}");
        let e = parse("[profiles.a]\npassword = \"sk-secret\"\n").unwrap_err();
        assert!(!e.contains("sk-secret"), "{e}");
    }
}
