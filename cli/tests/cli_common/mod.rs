//! Running the `simlsh` binary from the command-line tests (`cli`, `cli_vec`, `cli_index`).

use std::process::{Command, Output};

/// The binary under test.
pub fn simlsh() -> Command {
    Command::new(env!("CARGO_BIN_EXE_simlsh"))
}

/// Asserts that the run succeeded (showing its stderr otherwise); returns its stdout.
pub fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}
