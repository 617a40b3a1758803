//! Watchdogs: cleanup that runs when this process ends, however it ends.
//!
//! A [`Watchdog`] is a small `sh` child whose standard input is a pipe from this process. It
//! waits for end-of-file on that pipe and then runs its cleanup script (stop a cluster and
//! remove its files, kill a server). The write end is held only here: the standard library
//! opens every descriptor close-on-exec, so no other child (the servers included) inherits
//! it. The kernel closes it when this process exits, panics to an abort, or is killed (even
//! with `SIGKILL`), so the cleanup cannot be skipped. [`Watchdog::fire`] (or dropping the
//! value) closes it early and waits for the cleanup to finish, which is how a server is stopped
//! in the ordinary case too: one code path for every ending.
//!
//! The watchdog runs in a process group of its own and ignores `SIGINT` and `SIGHUP`, so a
//! Ctrl-C at the terminal or a signal to the test's process group ends the test process and
//! leaves the watchdog to clean up after it. `prctl(PR_SET_PDEATHSIG)` was not used: it fires
//! when the *thread* that spawned a child ends, and test threads end after every test, while
//! the servers shared by a test binary must outlive them.

use crate::{Context, Result};
use std::ffi::OsStr;
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Mutex;

/// Waits for the pipe to close; the cleanup follows.
const WAIT: &str = "trap '' INT HUP\nwhile read -r _; do :; done\n";

/// A running watchdog; see the module docs.
#[derive(Debug)]
pub struct Watchdog {
    running: Mutex<Option<(ChildStdin, Child)>>,
}

impl Watchdog {
    /// Starts a watchdog that runs the `sh` script `cleanup`, with `args` as `$1`, `$2`, ...,
    /// once this process closes its end of the pipe. Its output is discarded.
    pub fn spawn<I, S>(cleanup: &str, args: I) -> Result<Watchdog>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(format!("{WAIT}{cleanup}"))
            .arg("supabash-watchdog")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .context(|| "starting a watchdog (sh)".into())?;
        let Some(stdin) = child.stdin.take() else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(crate::Error::new(
                "the watchdog's standard input is not a pipe",
            ));
        };
        Ok(Watchdog {
            running: Mutex::new(Some((stdin, child))),
        })
    }

    /// A watchdog that kills process `pid` with `SIGKILL`. Fire it before reaping that
    /// process (while it is a child not yet waited for, its id cannot be reused).
    pub fn kill_process(pid: u32) -> Result<Watchdog> {
        Watchdog::spawn("kill -KILL \"$1\" 2>/dev/null\n", [pid.to_string()])
    }

    /// Runs the cleanup now and waits until it has finished. Later calls do nothing.
    pub fn fire(&self) {
        let running = self
            .running
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take();
        if let Some((stdin, mut child)) = running {
            drop(stdin);
            let _ = child.wait();
        }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.fire();
    }
}
