//! The `simlsh` command line: a thin layer over the library, one file per subcommand.
//!
//! Exit status: 0 on success (also when standard output is a pipe closed early, as by
//! `| head`), 1 when the run failed on its input, options or files (the message names the
//! file, line, row or value), 2 on an internal error (a bug).

mod cmd;
mod common;
mod input;
mod join;
mod names;
mod parquet;
mod sign;
mod table;

use clap::{Parser, Subcommand};

/// Random-hyperplane LSH (simhash): signatures, near-duplicates, k-NN and clusters.
#[derive(Parser)]
#[command(name = "simlsh", version, about, propagate_version = true, after_help = EXIT_STATUS)]
struct Cli {
    #[command(flatten)]
    global: common::Global,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    Bench(cmd::bench::Args),
    Dedup(cmd::dedup::Args),
    Index(cmd::index::Args),
    Sign(cmd::sign::Args),
    Knn(cmd::knn::Args),
    Cluster(cmd::cluster::Args),
    Eval(cmd::eval::Args),
    Store(cmd::store::Args),
    Serve(cmd::serve::Args),
}

const EXIT_STATUS: &str =
    "Exit status: 0 on success (also when the reader of standard output closes it
early, as `| head` does); 1 when the run fails on its input, options or files (the message
names the file, line, row or value); 2 for a malformed command line or an internal error.";

/// Exit status of a run that failed on its input, options or files (a user error).
const EXIT_USER: i32 = 1;
/// Exit status of an internal error (a bug: a panic), reported as such.
const EXIT_INTERNAL: i32 = 2;

fn main() {
    // A panic is a bug, never the user's fault: say so and exit with status 2.
    std::panic::set_hook(Box::new(|info| {
        common::stderr_line(format_args!(
            "simlsh: internal error (please report it): {info}"
        ));
    }));
    let code = match std::panic::catch_unwind(run) {
        Ok(code) => code,
        Err(_) => EXIT_INTERNAL,
    };
    std::process::exit(code);
}

/// Runs the command; its exit status (0, or [`EXIT_USER`] after printing the error).
fn run() -> i32 {
    let cli = Cli::parse();
    let result = common::Ctx::new(&cli.global).and_then(|mut ctx| {
        let r = match cli.command {
            Command::Bench(a) => cmd::bench::run(a, &mut ctx),
            Command::Dedup(a) => cmd::dedup::run(a, &mut ctx),
            Command::Index(a) => cmd::index::run(a, &mut ctx),
            Command::Sign(a) => cmd::sign::run(a, &mut ctx),
            Command::Knn(a) => cmd::knn::run(a, &mut ctx),
            Command::Cluster(a) => cmd::cluster::run(a, &mut ctx),
            Command::Eval(a) => cmd::eval::run(a, &mut ctx),
            Command::Store(a) => cmd::store::run(a, &mut ctx),
            Command::Serve(a) => cmd::serve::run(a, &ctx),
        };
        ctx.finish(r)
    });
    let Err(e) = result else { return 0 };
    // A closed pipe (`simlsh ... | head`) ends the run quietly and successfully, as ripgrep
    // does: the reader has all it wanted.
    let broken_pipe = e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            || c.downcast_ref::<simlsh::Error>().is_some_and(|s| {
                matches!(s, simlsh::Error::Io { source, .. } if source.kind() == std::io::ErrorKind::BrokenPipe)
            })
    });
    if broken_pipe {
        return 0;
    }
    // The chain of causes, each once: library errors already show their own cause.
    let mut msg = String::new();
    for cause in e.chain() {
        let c = cause.to_string();
        if !msg.contains(&c) {
            if !msg.is_empty() {
                msg.push_str(": ");
            }
            msg.push_str(&c);
        }
    }
    common::stderr_line(format_args!("simlsh: error: {msg}"));
    EXIT_USER
}
