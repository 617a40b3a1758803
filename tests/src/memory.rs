//! Peak anonymous memory of PostgreSQL backends, sampled from `/proc/<pid>/status` (`RssAnon`:
//! the backend's private heap, which is where the extension decodes bodies; shared buffers are
//! not counted) every few milliseconds while a workload runs.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// Samples the given backend pids until dropped or [`Sampler::finish`]ed.
pub struct Sampler {
    stop: Arc<AtomicBool>,
    peaks: Arc<Mutex<HashMap<i32, u64>>>,
    thread: Option<JoinHandle<()>>,
}

/// The backend's current `RssAnon`, in bytes (`None` once it is gone).
pub fn rss_anon(pid: i32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("RssAnon:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

impl Sampler {
    /// Starts sampling `pids` every 2 ms.
    pub fn start(pids: Vec<i32>) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let peaks = Arc::new(Mutex::new(HashMap::new()));
        let thread = {
            let (stop, peaks) = (stop.clone(), peaks.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    for &pid in &pids {
                        if let Some(now) = rss_anon(pid) {
                            let mut p = peaks.lock().unwrap();
                            let peak = p.entry(pid).or_insert(0);
                            *peak = (*peak).max(now);
                        }
                    }
                    std::thread::sleep(Duration::from_millis(2));
                }
            })
        };
        Sampler {
            stop,
            peaks,
            thread: Some(thread),
        }
    }

    /// Stops sampling and returns the peak `RssAnon` of each pid, in bytes.
    pub fn finish(mut self) -> HashMap<i32, u64> {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            t.join().unwrap();
        }
        self.peaks.lock().unwrap().clone()
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}
