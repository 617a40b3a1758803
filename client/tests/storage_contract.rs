//! The Storage API test server follows the observed contract of the real server
//! (docs/storage.md, "What the backend relies on"), row by row where the backend depends on it,
//! and a second user trying every object operation on the first user's prefix fails with the
//! first user's objects intact (row-level security from `sql/storage.sql` decides).
#![cfg(feature = "storage")]

use supabash_tests::storage_support;

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use storage_support::*;
use supabash::storage::{StorageApi, StorageWorkspace};
use supabash::workspace::CommitOptions;
use supabash::{ErrorCode, Limits};
use supabash_tests::storage_server::StorageServer;

struct Http {
    base: String,
    http: reqwest::Client,
}

impl Http {
    async fn send(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
        headers: &[(&str, &str)],
        body: Vec<u8>,
    ) -> (StatusCode, reqwest::header::HeaderMap, Vec<u8>) {
        let mut r = self
            .http
            .request(method, format!("{}{path}", self.base))
            .body(body);
        if let Some(t) = token {
            r = r.bearer_auth(t);
        }
        for (k, v) in headers {
            r = r.header(*k, *v);
        }
        let resp = r.send().await.unwrap();
        let status = resp.status();
        let h = resp.headers().clone();
        (status, h, resp.bytes().await.unwrap().to_vec())
    }

    async fn json(&self, method: Method, path: &str, token: &str, body: Value) -> (u16, Value) {
        let (s, _, b) = self
            .send(
                method,
                path,
                Some(token),
                &[("content-type", "application/json")],
                body.to_string().into_bytes(),
            )
            .await;
        (
            s.as_u16(),
            serde_json::from_slice(&b).unwrap_or(Value::Null),
        )
    }
}

fn status_in_body(v: &Value) -> (&str, &str) {
    (
        v["statusCode"].as_str().unwrap_or(""),
        v["code"].as_str().unwrap_or(""),
    )
}

#[tokio::test]
async fn the_test_server_follows_the_observed_contract() {
    let server = server().await;
    let h = Http {
        base: server.url.clone(),
        http: reqwest::Client::new(),
    };
    let u1 = new_session();
    let t1 = u1.access_token.as_str();
    let key = format!("/object/{BUCKET}/{}/notes.md", u1.user_id);

    // Rows 1-3: upload, duplicate without upsert, only lowercase `true` upserts.
    let (s, _, b) = h
        .send(
            Method::POST,
            &key,
            Some(t1),
            &[("x-upsert", "true"), ("content-type", "text/markdown")],
            b"hello".to_vec(),
        )
        .await;
    assert_eq!(s, 200);
    let first: Value = serde_json::from_slice(&b).unwrap();
    assert_eq!(first["Key"], format!("{BUCKET}/{}/notes.md", u1.user_id));
    for upsert in [None, Some("false"), Some("TRUE")] {
        let hdrs: Vec<(&str, &str)> = upsert.map(|u| ("x-upsert", u)).into_iter().collect();
        let (s, _, b) = h
            .send(Method::POST, &key, Some(t1), &hdrs, b"x".to_vec())
            .await;
        assert_eq!(s, 400);
        let v: Value = serde_json::from_slice(&b).unwrap();
        assert_eq!(status_in_body(&v), ("409", "KeyAlreadyExists"));
    }
    // Rows 9-12: ETag is the quoted md5; If-None-Match gives 304.
    let md5 = "\"5d41402abc4b2a76b9719d911017c592\"";
    let info_path = format!(
        "/object/info/authenticated/{BUCKET}/{}/notes.md",
        u1.user_id
    );
    let (s, hd, b) = h.send(Method::GET, &info_path, Some(t1), &[], vec![]).await;
    assert_eq!(s, 200);
    assert_eq!(hd["etag"], md5);
    let info: Value = serde_json::from_slice(&b).unwrap();
    assert_eq!(
        (info["size"].as_u64(), info["etag"].as_str()),
        (Some(5), Some(md5))
    );
    let get = format!("/object/authenticated/{BUCKET}/{}/notes.md", u1.user_id);
    let (s, hd, b) = h.send(Method::GET, &get, Some(t1), &[], vec![]).await;
    assert_eq!((s.as_u16(), b.as_slice()), (200, &b"hello"[..]));
    assert_eq!(hd["content-type"], "text/markdown");
    let (s, _, b) = h
        .send(
            Method::GET,
            &get,
            Some(t1),
            &[("if-none-match", md5)],
            vec![],
        )
        .await;
    assert_eq!((s.as_u16(), b.len()), (304, 0));
    // Row 13: a range read is 206 with content-range (the backend reads packed bodies so).
    let (s, hd, b) = h
        .send(
            Method::GET,
            &get,
            Some(t1),
            &[("range", "bytes=1-3")],
            vec![],
        )
        .await;
    assert_eq!((s.as_u16(), b.as_slice()), (206, &b"ell"[..]));
    assert_eq!(hd["content-range"], "bytes 1-3/5");
    // Row 14-15: an upsert keeps the id, changes the etag; the old etag no longer matches.
    let (_, _, b) = h
        .send(Method::PUT, &key, Some(t1), &[], b"hello again".to_vec())
        .await;
    let again: Value = serde_json::from_slice(&b).unwrap();
    assert_eq!(again["Id"], first["Id"]);
    let (s, _, _) = h
        .send(
            Method::GET,
            &get,
            Some(t1),
            &[("if-none-match", md5)],
            vec![],
        )
        .await;
    assert_eq!(s, 200);
    // Rows 18, 33, 34, 43: errors as HTTP 400 with the status in the body.
    let missing = format!("/object/authenticated/{BUCKET}/{}/nope.md", u1.user_id);
    let (s, _, b) = h.send(Method::GET, &missing, Some(t1), &[], vec![]).await;
    assert_eq!(s, 400);
    assert_eq!(
        status_in_body(&serde_json::from_slice(&b).unwrap()),
        ("404", "NoSuchKey")
    );
    let (s, _, b) = h.send(Method::GET, &get, None, &[], vec![]).await;
    assert_eq!(s, 400);
    assert_eq!(
        status_in_body(&serde_json::from_slice(&b).unwrap()),
        ("400", "InvalidRequest")
    );
    let (_, _, b) = h
        .send(Method::GET, &get, Some("not.a.jwt"), &[], vec![])
        .await;
    assert_eq!(
        status_in_body(&serde_json::from_slice(&b).unwrap()),
        ("403", "AccessDenied")
    );
    let non_ascii = format!("/object/{BUCKET}/{}/%C3%A9t%C3%A9.md", u1.user_id);
    let (s, _, b) = h
        .send(Method::POST, &non_ascii, Some(t1), &[], b"x".to_vec())
        .await;
    assert_eq!(s, 400);
    assert_eq!(
        status_in_body(&serde_json::from_slice(&b).unwrap()),
        ("400", "InvalidKey")
    );
    // Row 7-8: list-v2 with and without delimiter, paged by cursor.
    for i in 0..5 {
        let k = format!("/object/{BUCKET}/{}/sub/f{i}.txt", u1.user_id);
        h.send(Method::POST, &k, Some(t1), &[], vec![b'0' + i])
            .await;
    }
    let list = format!("/object/list-v2/{BUCKET}");
    let (_, v) = h
        .json(
            Method::POST,
            &list,
            t1,
            json!({"prefix": format!("{}/", u1.user_id), "with_delimiter": true}),
        )
        .await;
    assert_eq!(v["folders"][0]["key"], "sub");
    assert_eq!(v["objects"][0]["key"], "notes.md");
    let mut names = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut body = json!({"prefix": format!("{}/sub/", u1.user_id), "limit": 2});
        if let Some(c) = &cursor {
            body["cursor"] = json!(c);
        }
        let (s, v) = h.json(Method::POST, &list, t1, body).await;
        assert_eq!(s, 200);
        for o in v["objects"].as_array().unwrap() {
            assert!(o.get("key").is_none());
            names.push(o["name"].as_str().unwrap().to_owned());
        }
        if v["hasNext"] != true {
            break;
        }
        cursor = Some(v["nextCursor"].as_str().unwrap().to_owned());
    }
    assert_eq!(names.len(), 5);
    // Rows 21-24: batch delete returns the deleted rows only, exact names, at least one.
    let del = format!("/object/{BUCKET}");
    let (s, v) = h
        .json(Method::DELETE, &del, t1, json!({"prefixes": [format!("{}/sub/f0.txt", u1.user_id), format!("{}/missing", u1.user_id), format!("{}/sub/", u1.user_id)]}))
        .await;
    assert_eq!(s, 200);
    assert_eq!(v.as_array().unwrap().len(), 1);
    let (s, v) = h
        .json(Method::DELETE, &del, t1, json!({"prefixes": []}))
        .await;
    assert_eq!((s, status_in_body(&v)), (400, ("400", "InvalidRequest")));
}

#[tokio::test]
async fn a_second_user_cannot_touch_the_first_users_prefix() {
    let server = server().await;
    let u1 = new_session();
    let u2 = new_session();
    let ws = open(&server, &u1).await;
    ws.fs().write("/secret.md", "u1 only").await.unwrap();
    ws.fs().mkdir("/dir", false).await.unwrap();
    ws.commit(CommitOptions::new("u1")).await.unwrap();
    let before = dump(open(&server, &u1).await.fs()).await;

    let p1 = format!("{}/", u1.user_id);
    let as_u2 = StorageApi::new(&server.url, BUCKET, &p1, &u2.access_token, None).unwrap();
    let secret = format!("{p1}secret.md");
    assert_eq!(as_u2.download(&secret).await.unwrap(), None);
    assert_eq!(as_u2.info(&secret).await.unwrap(), None);
    assert!(as_u2.list(&p1).await.unwrap().is_empty());
    for key in [
        secret.clone(),
        format!("{p1}new.md"),
        format!("{p1}.supabash/head.json"),
    ] {
        let e = as_u2
            .upload(
                &key,
                b"u2 was here".to_vec(),
                "text/plain",
                &json!({}),
                true,
            )
            .await
            .unwrap_err();
        assert_eq!(e.code(), ErrorCode::Authorization, "{key}");
        let e = as_u2
            .upload(&key, b"u2".to_vec(), "text/plain", &json!({}), false)
            .await
            .unwrap_err();
        assert_eq!(e.code(), ErrorCode::Authorization, "{key}");
    }
    assert!(as_u2
        .delete(std::slice::from_ref(&secret))
        .await
        .unwrap()
        .is_empty());
    let h = Http {
        base: server.url.clone(),
        http: reqwest::Client::new(),
    };
    let t2 = u2.access_token.as_str();
    let (s, _, b) = h
        .send(
            Method::DELETE,
            &format!("/object/{BUCKET}/{secret}"),
            Some(t2),
            &[],
            vec![],
        )
        .await;
    assert_eq!(s, 400);
    assert_eq!(
        status_in_body(&serde_json::from_slice(&b).unwrap()),
        ("403", "AccessDenied")
    );
    let (s, _, b) = h
        .send(
            Method::PUT,
            &format!("/object/{BUCKET}/{secret}"),
            Some(t2),
            &[],
            b"u2".to_vec(),
        )
        .await;
    assert_eq!(s, 400);
    assert_eq!(
        status_in_body(&serde_json::from_slice(&b).unwrap()),
        ("403", "AccessDenied")
    );
    for op in ["copy", "move"] {
        let (s, v) = h
            .json(Method::POST, &format!("/object/{op}"), t2, json!({"bucketId": BUCKET, "sourceKey": secret, "destinationKey": format!("{}/stolen.md", u2.user_id)}))
            .await;
        assert_eq!(s, 400, "{op}: {v}");
    }
    // A workspace over u1's prefix with u2's token sees nothing and cannot commit.
    let api = StorageApi::new(&server.url, BUCKET, &p1, &u2.access_token, None).unwrap();
    let intruder = StorageWorkspace::open(api, Limits::default())
        .await
        .unwrap();
    assert!(dump(intruder.fs()).await.is_empty());
    intruder
        .fs()
        .write("/secret.md", "overwritten")
        .await
        .unwrap();
    let e = intruder.commit(CommitOptions::new("u2")).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::Authorization, "{e}");

    assert_eq!(dump(open(&server, &u1).await.fs()).await, before);
    let service = StorageApi::new(
        &server.url,
        BUCKET,
        &p1,
        &StorageServer::service_key(),
        None,
    )
    .unwrap();
    assert_eq!(
        service.download(&secret).await.unwrap().unwrap(),
        b"u1 only"
    );
}
