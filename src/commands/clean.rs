//! `bench clean`: containers and networks bench left behind.

use std::path::Path;

use miette::{Report, miette};

use crate::exit_codes;
use crate::run::sequence::docker_runtime;

use super::load;

pub(super) fn clean(file: Option<&Path>) -> Result<u8, Report> {
    let (host, hosts) = match file {
        Some(f) => {
            let m = load(f)?;
            (m.backend.host, m.backend.hosts)
        }
        None => (None, Vec::new()),
    };
    if !hosts.is_empty() {
        let (removed, errors) = docker_runtime()?
            .block_on(crate::backend::pool::clean(&hosts))
            .map_err(|e| miette!("{e}"))?;
        for n in &removed {
            println!("removed {n}");
        }
        println!(
            "{} bench containers and networks removed on {} hosts",
            removed.len(),
            hosts.len() - errors.len()
        );
        if !errors.is_empty() {
            return Err(miette!(
                "some hosts could not be cleaned:\n  {}",
                errors.join("\n  ")
            ));
        }
        return Ok(exit_codes::OK);
    }
    let removed = docker_runtime()?.block_on(async {
        let d = crate::backend::docker::DockerHost::connect(host.as_deref()).await?;
        let mut removed = Vec::new();
        for (id, name, _) in d.list(&[]).await? {
            d.remove(&id).await?;
            removed.push(name);
        }
        // Then their networks (egress proxies', a trial's services'), free of containers now.
        let mut networks = Vec::new();
        for (name, _) in d.networks(&[]).await? {
            d.remove_network(&name).await?;
            networks.push(name);
        }
        Ok::<_, String>((removed, networks))
    });
    let (removed, networks) = removed.map_err(|e| miette!("{e}"))?;
    for n in removed.iter().chain(&networks) {
        println!("removed {n}");
    }
    println!(
        "{} bench containers removed, {} bench networks removed",
        removed.len(),
        networks.len()
    );
    Ok(exit_codes::OK)
}
