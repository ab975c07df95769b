//! `argus token …`: API tokens for `[[auth.tokens]]`. Only the SHA-256 goes into argus.toml; the
//! token itself is shown once, to hand to the client.

use crate::auth;
use anyhow::{Result, bail};
use clap::Subcommand;

#[derive(Subcommand)]
pub enum Cmd {
    /// Prints a fresh random token and the [[auth.tokens]] entry that accepts it.
    New {
        /// Who will hold it (shown in logs and 403 answers).
        #[arg(long)]
        name: String,
        /// Its scopes: read, write, admin (repeat or separate with commas).
        #[arg(long, value_delimiter = ',', default_value = "read")]
        scope: Vec<String>,
    },
    /// Prints the SHA-256 of a token read from standard input (one line), for an existing token.
    Hash,
}

pub fn run(cmd: Cmd) -> Result<()> {
    match cmd {
        Cmd::New { name, scope } => {
            for s in &scope {
                if !matches!(s.as_str(), "read" | "write" | "admin") {
                    bail!("--scope: {s:?} is not read, write or admin");
                }
            }
            let token = auth::new_token()?;
            let scopes: Vec<String> = scope.iter().map(|s| format!("{s:?}")).collect();
            eprintln!("The token (shown once; give it to the client as \"Authorization: Bearer <token>\"):");
            println!("{token}");
            eprintln!("\nAdd to argus.toml:");
            println!(
                "\n[[auth.tokens]]\nname = {name:?}\nscopes = [{}]\nsha256 = \"{}\"",
                scopes.join(", "),
                auth::hash_token(&token)
            );
            Ok(())
        }
        Cmd::Hash => {
            let mut line = String::new();
            std::io::stdin().read_line(&mut line)?;
            let token = line.trim_end_matches(['\n', '\r']);
            if token.is_empty() {
                bail!("no token on standard input");
            }
            println!("{}", auth::hash_token(token));
            Ok(())
        }
    }
}
