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
        /// Its scopes: read, write, silence, admin (repeat or separate with commas).
        #[arg(long, value_delimiter = ',', default_value = "read")]
        scope: Vec<String>,
        /// Confines it to the series this label matcher selects, e.g. 'cluster="a"' (repeat for
        /// several, all of which must hold; docs/auth.md, "Tenancy").
        #[arg(long)]
        matcher: Vec<String>,
    },
    /// Prints the SHA-256 of a token read from standard input (one line), for an existing token.
    Hash,
}

pub fn run(cmd: Cmd) -> Result<()> {
    match cmd {
        Cmd::New { name, scope, matcher } => {
            for s in &scope {
                if !matches!(s.as_str(), "read" | "write" | "silence" | "admin") {
                    bail!("--scope: {s:?} is not read, write, silence or admin");
                }
            }
            if !matcher.is_empty() {
                argus_store_api::LabelScope::parse(&matcher).map_err(|e| anyhow::anyhow!("--matcher: {e}"))?;
            }
            let token = auth::new_token()?;
            let scopes: Vec<String> = scope.iter().map(|s| format!("{s:?}")).collect();
            eprintln!("The token (shown once; give it to the client as \"Authorization: Bearer <token>\"):");
            println!("{token}");
            eprintln!("\nAdd to argus.toml:");
            let matchers = if matcher.is_empty() {
                String::new()
            } else {
                let quoted: Vec<String> = matcher.iter().map(|m| toml::Value::from(m.as_str()).to_string()).collect();
                format!("\nmatchers = [{}]", quoted.join(", "))
            };
            println!(
                "\n[[auth.tokens]]\nname = {name:?}\nscopes = [{}]{matchers}\nsha256 = \"{}\"",
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
