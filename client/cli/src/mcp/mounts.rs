//! The mount flags of `supabash mcp`: `--mount POINT=SOURCE[@REVISION][:ro|:rw]`, with
//! `--view-root POINT=ROOT` and `--hide POINT=PATH` per mount, read into [`MountPlan`]s and
//! checked before anything is opened (a malformed spec, a pinned revision asked read-write,
//! two mounts at one point or one inside another, a view flag for no mount).

use std::collections::BTreeMap;

/// One mount to serve.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountPlan {
    /// Where it appears, e.g. `/docs`.
    pub point: String,
    /// The workspace id.
    pub source: String,
    /// A pinned revision: the mount is a read-only snapshot of it.
    pub revision: Option<String>,
    /// Read-write (the workspace's staged tree) or read-only (a snapshot of its committed
    /// base revision, or of `revision`).
    pub writable: bool,
    /// `--view-root` of this mount.
    pub root: Option<String>,
    /// `--hide` of this mount.
    pub hidden: Vec<String>,
}

/// Reads one `--mount` value. Without `:ro`/`:rw` a mount is read-write, or read-only when it
/// pins a revision (asking a pinned revision `:rw` is refused).
pub fn parse_mount(spec: &str) -> Result<MountPlan, String> {
    let bad =
        |why: &str| format!("--mount {spec:?}: {why} (expected POINT=SOURCE[@REVISION][:ro|:rw])");
    let (point, rest) = spec
        .split_once('=')
        .ok_or_else(|| bad("no '=' between the mount point and the source"))?;
    let point = point.trim_end_matches('/');
    if !point.starts_with('/') {
        return Err(bad("the mount point must be an absolute path other than /"));
    }
    let (rest, mode) = match rest.rsplit_once(':') {
        Some((r, "ro")) => (r, Some(false)),
        Some((r, "rw")) => (r, Some(true)),
        Some((_, m)) => return Err(bad(&format!("unknown mode {m:?}"))),
        None => (rest, None),
    };
    let (source, revision) = match rest.split_once('@') {
        Some((s, "")) => return Err(bad(&format!("empty revision after {s}@"))),
        Some((s, r)) => (s, Some(r.to_owned())),
        None => (rest, None),
    };
    if source.is_empty() {
        return Err(bad("no source workspace"));
    }
    if revision.is_some() && mode == Some(true) {
        return Err(bad(
            "a pinned revision is a read-only snapshot; use :ro or no mode",
        ));
    }
    Ok(MountPlan {
        point: point.to_owned(),
        source: source.to_owned(),
        writable: mode.unwrap_or(revision.is_none()),
        revision,
        root: None,
        hidden: Vec::new(),
    })
}

fn point_value<'a>(flag: &str, spec: &'a str) -> Result<(&'a str, &'a str), String> {
    spec.split_once('=')
        .filter(|(p, v)| !p.is_empty() && !v.is_empty())
        .map(|(p, v)| (p.trim_end_matches('/'), v))
        .ok_or_else(|| format!("{flag} {spec:?}: expected POINT=PATH, POINT being a --mount point"))
}

/// Whether `a` and `b` are the same path or one lies inside the other.
fn overlap(a: &str, b: &str) -> bool {
    let inside = |x: &str, y: &str| x == y || x.strip_prefix(y).is_some_and(|r| r.starts_with('/'));
    inside(a, b) || inside(b, a)
}

/// Every `--mount`, with its `--view-root` and `--hide` flags, checked together.
pub fn plan(
    mounts: &[String],
    roots: &[String],
    hides: &[String],
) -> Result<Vec<MountPlan>, String> {
    let mut plans = mounts
        .iter()
        .map(|m| parse_mount(m))
        .collect::<Result<Vec<_>, _>>()?;
    for (i, a) in plans.iter().enumerate() {
        for b in &plans[i + 1..] {
            if overlap(&a.point, &b.point) {
                return Err(format!(
                    "--mount: the mount points {} and {} overlap; give each mount its own directory",
                    a.point, b.point
                ));
            }
        }
    }
    let mut index: BTreeMap<String, usize> = BTreeMap::new();
    for (i, p) in plans.iter().enumerate() {
        index.insert(p.point.clone(), i);
    }
    let find = |flag: &str, point: &str| {
        index
            .get(point)
            .copied()
            .ok_or_else(|| format!("{flag}: {point} is not a --mount point"))
    };
    for spec in roots {
        let (point, root) = point_value("--view-root", spec)?;
        let i = find("--view-root", point)?;
        if plans[i].root.replace(root.to_owned()).is_some() {
            return Err(format!("--view-root: {point} has two view roots"));
        }
    }
    for spec in hides {
        let (point, path) = point_value("--hide", spec)?;
        let i = find("--hide", point)?;
        plans[i].hidden.push(path.to_owned());
    }
    Ok(plans)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn specs_and_their_modes() {
        let ws = "0b6f3c2e-9a41-4d7e-8c55-1f2a3b4c5d6e";
        let m = parse_mount(&format!("/memories={ws}")).unwrap();
        assert!(m.writable && m.revision.is_none());
        assert!(!parse_mount(&format!("/m={ws}:ro")).unwrap().writable);
        assert!(parse_mount(&format!("/m={ws}:rw")).unwrap().writable);
        let d = parse_mount(&format!("/docs/={ws}@1a2b3c")).unwrap();
        assert_eq!(
            (d.point.as_str(), d.revision.as_deref(), d.writable),
            ("/docs", Some("1a2b3c"), false)
        );
        assert!(
            !parse_mount(&format!("/docs={ws}@1a2b:ro"))
                .unwrap()
                .writable
        );
        for bad in [
            format!("/docs={ws}@1a2b:rw"),
            format!("docs={ws}"),
            format!("/={ws}"),
            format!("/docs{ws}"),
            "/docs=".to_owned(),
            format!("/docs={ws}@"),
            format!("/docs={ws}:rx"),
        ] {
            assert!(parse_mount(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn overlapping_points_and_stray_view_flags_are_refused() {
        let e = plan(&["/a=x".into(), "/a/b=y:ro".into()], &[], &[]).unwrap_err();
        assert!(e.contains("overlap"), "{e}");
        assert!(plan(&["/a=x".into(), "/a=y".into()], &[], &[]).is_err());
        assert!(plan(&["/a=x".into(), "/ab=y".into()], &[], &[]).is_ok());
        let e = plan(&["/a=x".into()], &["/b=/src".into()], &[]).unwrap_err();
        assert!(e.contains("not a --mount point"), "{e}");
        let p = plan(
            &["/a=x".into(), "/b=y@r".into()],
            &["/b=/src".into()],
            &["/b=/src/secret".into(), "/b=/src/.env".into()],
        )
        .unwrap();
        assert_eq!(p[1].root.as_deref(), Some("/src"));
        assert_eq!(p[1].hidden, ["/src/secret", "/src/.env"]);
        assert!(plan(&["/a=x".into()], &["/a=/r".into(), "/a=/s".into()], &[]).is_err());
    }

    proptest! {
        /// Any input is parsed or refused, never a panic; what parses round-trips its parts.
        #[test]
        fn never_panics(spec in "\\PC{0,60}") {
            if let Ok(m) = parse_mount(&spec) {
                prop_assert!(m.point.starts_with('/'));
                prop_assert!(!m.source.is_empty());
                prop_assert!(!(m.writable && m.revision.is_some()));
            }
        }
    }
}
