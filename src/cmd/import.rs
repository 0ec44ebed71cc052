//! `orchestra import CONFIG.YAML`: the seed tool's config.yaml written as an orchestra.toml
//! (the conversion is `crate::import`). Nothing is written on bad input, and an existing
//! manifest is replaced only with `--force`.

use std::io::Write;

use crate::cli::ImportArgs;
use crate::cmd::{open_repo, Output};
use crate::error::Error;

pub fn run(args: &ImportArgs, out: &mut Output<'_>) -> Result<(), Error> {
    let target = match &args.manifest.config {
        Some(path) => path.clone(),
        None => {
            crate::manifest::default_path(open_repo(args.manifest.repo.as_deref())?.main_worktree())
        }
    };
    let text = std::fs::read_to_string(&args.file)
        .map_err(|e| Error::BadInput(format!("cannot read {}: {e}", args.file.display())))?;
    let imported = crate::import::convert(&text, &args.file.display().to_string())?;
    let manifest = crate::manifest::parse(&imported.toml, &target.display().to_string())?;
    if args.force {
        // A replacement appears whole or not at all.
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "orchestra.toml".into());
        let temp = target.with_file_name(format!(".{name}.import-{}", std::process::id()));
        std::fs::write(&temp, &imported.toml)
            .and_then(|()| std::fs::rename(&temp, &target))
            .map_err(|e| {
                let _ = std::fs::remove_file(&temp);
                Error::io(format!("writing {}", target.display()))(e)
            })?;
    } else {
        // create_new: a manifest that appears meanwhile is not overwritten either.
        let mut file = match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&target)
        {
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                return Err(Error::Refused(format!(
                    "{} exists: pass --force to replace it",
                    target.display()
                )))
            }
            other => other.map_err(Error::io(format!("writing {}", target.display())))?,
        };
        if let Err(e) = file.write_all(imported.toml.as_bytes()) {
            drop(file);
            let _ = std::fs::remove_file(&target);
            return Err(Error::io(format!("writing {}", target.display()))(e));
        }
    }
    for renamed in &imported.renamed {
        out.note(renamed);
    }
    for skipped in &imported.not_mapped {
        out.note(format!("not imported (kept as a comment): {skipped}"));
    }
    out.line(format!(
        "wrote {}: sessions {}, hosts {}, dependencies {}{}",
        target.display(),
        manifest.sessions.len(),
        manifest.hosts.len(),
        manifest.dependencies.len(),
        match imported.not_mapped.len() {
            0 => String::new(),
            n => format!("; kept as comments {n}"),
        }
    ));
    Ok(())
}
