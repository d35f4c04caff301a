//! The `simlsh` command line: a thin layer over the library, one file per subcommand.

mod cmd;
mod common;

use clap::{Parser, Subcommand};

/// Random-hyperplane LSH (simhash): signatures, near-duplicates, k-NN and clusters.
#[derive(Parser)]
#[command(name = "simlsh", version, about, propagate_version = true)]
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
}

fn main() {
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
        };
        ctx.finish(r)
    });
    if let Err(e) = result {
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
        eprintln!("simlsh: error: {msg}");
        std::process::exit(1);
    }
}
