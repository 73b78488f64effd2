//! The README's quick start through the packaged `toolprune` crate
//! (scripts/test-packages builds it as `src/main.rs` of a scratch crate made
//! by `cargo add toolprune --path dist/crates/toolprune-V`, on a toolchain
//! without the wasm32 target):
//!
//! ```text
//! quickstart prune THRESHOLD REQUEST FILE   the body on stdout (as `toolprune prune`)
//! quickstart load WASM                      Pruner::from_file: the error on stdout, exit 1
//! quickstart origin                         where the embedded component came from
//! ```

use std::io::Write as _;
use std::process::ExitCode;

use toolprune::{ConversationOptions, Pruner, ToolResult};

type Error = Box<dyn std::error::Error + Send + Sync>;

fn prune(threshold: &str, request: &str, file: &str) -> Result<(), Error> {
    let pruner = Pruner::shared()?;
    let conversation = pruner.conversation(ConversationOptions {
        enabled: true,
        threshold: Some(threshold.to_string()),
        ..ConversationOptions::default()
    })?;
    let turn = conversation.turn(request);
    let result = turn.on_tool_result(ToolResult::prunable("fetch", std::fs::read_to_string(file)?));
    std::io::stdout().write_all(result.body.as_bytes())?;
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    match args[..] {
        ["prune", threshold, request, file] => match prune(threshold, request, file) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("quickstart: {e}");
                ExitCode::FAILURE
            }
        },
        ["load", wasm] => match Pruner::from_file(wasm) {
            Ok(_) => {
                println!("loaded");
                ExitCode::SUCCESS
            }
            Err(e) => {
                println!("{e:#}");
                ExitCode::FAILURE
            }
        },
        ["origin"] => {
            println!("{} {}", toolprune_artifacts::COMPONENT_ORIGIN, toolprune_artifacts::COMPONENT_SHA256);
            ExitCode::SUCCESS
        }
        _ => {
            eprintln!("usage: quickstart prune THRESHOLD REQUEST FILE | load WASM | origin");
            ExitCode::from(2)
        }
    }
}
