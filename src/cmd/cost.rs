//! `orchestra cost`: what the claude sessions cost, per session, outcome or day.

use crate::cli::{CostArgs, CostBy};
use crate::cmd::{dollars, open_repo, render_table, Context, Output};
use crate::cost::{self, Cost, Group, Prices};
use crate::error::Error;

pub fn run(ctx: &Context, args: &CostArgs, out: &mut Output<'_>) -> Result<(), Error> {
    let repo = if args.all {
        None
    } else {
        Some(
            open_repo(args.repo.repo.as_deref())
                .map_err(|e| match e {
                    Error::Git(g, _) => {
                        Error::BadInput(format!("{g} (use --all for the sessions of every repo)"))
                    }
                    other => other,
                })?
                .id(),
        )
    };
    let prices = Prices::load(&ctx.home).map_err(|e| Error::BadInput(e.to_string()))?;
    let store = ctx.store()?;
    let sessions = store.sessions(repo.as_deref(), true)?;
    cost::refresh(&store, &sessions)?;
    let costs = cost::costs(&store, &prices, &sessions, repo.as_deref())?;
    let groups: Vec<Group> = match args.by {
        CostBy::Session => costs
            .iter()
            .map(|c| Group {
                name: c.label.clone(),
                sessions: 1,
                cost: c.cost.clone(),
            })
            .collect(),
        CostBy::Outcome => cost::by_outcome(&costs, &prices),
        CostBy::Day => cost::by_day(&costs, &prices),
    };
    if args.json {
        let json = match args.by {
            CostBy::Session => serde_json::to_string_pretty(&costs),
            _ => serde_json::to_string_pretty(&groups),
        };
        out.line(json.unwrap_or_else(|_| "[]".into()));
        return Ok(());
    }
    if groups.is_empty() {
        out.line("no claude sessions with a cost");
        return Ok(());
    }
    let first = match args.by {
        CostBy::Session => "LABEL",
        CostBy::Outcome => "OUTCOME",
        CostBy::Day => "DAY",
    };
    let mut header = vec![first];
    match args.by {
        CostBy::Session => header.push("OUTCOME"),
        _ => header.push("SESSIONS"),
    }
    header.extend(["INPUT", "OUTPUT", "CACHE WRITE", "CACHE READ", "COST"]);
    let mut rows: Vec<Vec<String>> = groups
        .iter()
        .zip(0..)
        .map(|(g, i)| {
            let second = match args.by {
                CostBy::Session => costs[i].outcome.clone(),
                _ => g.sessions.to_string(),
            };
            let mut row = vec![g.name.clone(), second];
            row.extend(cells(&g.cost));
            row
        })
        .collect();
    let mut total = Cost::default();
    for g in &groups {
        total = sum(total, &g.cost, &prices);
    }
    let mut last = vec!["TOTAL".to_string(), String::new()];
    last.extend(cells(&total));
    rows.push(last);
    for line in render_table(&header, &rows) {
        out.line(line);
    }
    let unpriced: Vec<&str> = total
        .models
        .iter()
        .filter(|m| m.cost_usd.is_none())
        .map(|m| m.model.as_str())
        .collect();
    if !unpriced.is_empty() {
        out.line(format!(
            "no price for {} (tokens only): add it to {}",
            unpriced.join(", "),
            ctx.home.join("prices.toml").display()
        ));
    }
    Ok(())
}

fn sum(mut total: Cost, c: &Cost, prices: &Prices) -> Cost {
    for m in &c.models {
        total = cost::with(total, &m.model, &m.tokens, prices);
    }
    total
}

fn cells(c: &Cost) -> Vec<String> {
    vec![
        c.tokens.input.to_string(),
        c.tokens.output.to_string(),
        c.tokens.cache_creation.to_string(),
        c.tokens.cache_read.to_string(),
        dollars(c.cost_usd),
    ]
}
