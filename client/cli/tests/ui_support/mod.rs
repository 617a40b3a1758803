//! What the browser tests of `supabash ui` share: the viewer and chromedriver as child
//! processes, waits on the page, screenshots, and a TCP proxy that can lose the database.

use fantoccini::elements::Element;
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::json;
use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use supabash_tests::client::cluster;

/// A child process killed when the test ends.
pub struct Killed(pub Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `supabash ui` as `user`, and the address it printed.
pub fn start_ui(user: &str) -> (Killed, String) {
    start_ui_on(user, &cluster().dsn("authenticator"))
}

/// `supabash ui` as `user` over the connection string `dsn`.
pub fn start_ui_on(user: &str, dsn: &str) -> (Killed, String) {
    start_ui_bin(env!("CARGO_BIN_EXE_supabash"), user, dsn)
}

/// The `supabash` at `bin` serving `ui` as `user` over `dsn` (the benchmark compares builds).
pub fn start_ui_bin(bin: &str, user: &str, dsn: &str) -> (Killed, String) {
    let mut child = Command::new(bin)
        .arg("ui")
        .env("SUPABASH_DSN", dsn)
        .env("SUPABASH_SUB", user)
        .env_remove("SUPABASH_WORKSPACE")
        .env_remove("SUPABASH_URL")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.starts_with("http://127.0.0.1:"), "{line:?}");
    (Killed(child), line.trim().to_owned())
}

/// chromedriver in a process group of its own, which goes whole when the test ends (so a
/// failed test that never closed its session leaves no browser behind).
pub struct Driver(Child);

impl Drop for Driver {
    fn drop(&mut self) {
        let group = format!("-{}", self.0.id());
        let _ = Command::new("kill").args(["-KILL", "--", &group]).status();
        let _ = self.0.wait();
    }
}

/// Headless Chromium behind chromedriver.
pub async fn browser() -> (Driver, Client) {
    use std::os::unix::process::CommandExt;
    let port = free_port();
    let driver = Driver(
        Command::new("/usr/bin/chromedriver")
            .arg(format!("--port={port}"))
            .process_group(0)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver (apt-get install chromium chromium-driver)"),
    );
    let caps = json!({ "goog:chromeOptions": {
        "binary": "/usr/bin/chromium",
        "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--window-size=1280,900", "--lang=en-US"],
    }});
    let caps = caps.as_object().unwrap().clone();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        match ClientBuilder::new(connector)
            .capabilities(caps.clone())
            .connect(&format!("http://127.0.0.1:{port}"))
            .await
        {
            Ok(c) => return (driver, c),
            Err(e) if Instant::now() > deadline => panic!("chromedriver: {e}"),
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

pub async fn find(c: &Client, css: &str) -> Element {
    c.wait()
        .at_most(Duration::from_secs(20))
        .for_element(Locator::Css(css))
        .await
        .unwrap_or_else(|e| panic!("{css}: {e}"))
}

/// Waits until the text of `css` contains `want`.
pub async fn wait_text(c: &Client, css: &str, want: &str) -> Element {
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut seen = String::new();
    loop {
        if let Ok(e) = c.find(Locator::Css(css)).await {
            seen = e.text().await.unwrap_or_default();
            if seen.contains(want) {
                return e;
            }
        }
        if Instant::now() >= deadline {
            let page = c
                .execute("return document.querySelector('main')?.innerText", vec![])
                .await
                .unwrap_or_default();
            panic!("{css} never showed {want:?}: {seen:?}; the page: {page}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Clicks the first link under `css` whose text contains `text`.
pub async fn click_link(c: &Client, css: &str, text: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        for a in c.find_all(Locator::Css(css)).await.unwrap() {
            if a.text().await.unwrap_or_default().contains(text) {
                a.click().await.unwrap();
                return;
            }
        }
        assert!(Instant::now() < deadline, "no link {text:?} under {css}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

pub async fn screenshot(c: &Client, name: &str) {
    let dir = std::env::var("SUPABASH_UI_SCREENSHOTS")
        .unwrap_or_else(|_| env!("CARGO_TARGET_TMPDIR").to_owned());
    std::fs::create_dir_all(&dir).unwrap();
    let png = c.screenshot().await.unwrap();
    std::fs::write(format!("{dir}/{name}.png"), png).unwrap();
}

/// A TCP proxy in front of the cluster that can lose every connection (and refuse new ones)
/// until it is brought back.
pub struct Proxy {
    pub port: u16,
    down: tokio::sync::watch::Sender<bool>,
}

impl Proxy {
    pub async fn start(upstream: u16) -> Proxy {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let (down, rx) = tokio::sync::watch::channel(false);
        tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                let mut rx = rx.clone();
                if *rx.borrow() {
                    continue;
                }
                tokio::spawn(async move {
                    let Ok(mut up) = tokio::net::TcpStream::connect(("127.0.0.1", upstream)).await
                    else {
                        return;
                    };
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut inbound, &mut up) => {}
                        _ = rx.wait_for(|d| *d) => {}
                    }
                });
            }
        });
        Proxy { port, down }
    }

    pub fn set_down(&self, down: bool) {
        self.down.send_replace(down);
    }
}
