//! What every command and domain module may need from its environment: the home and the
//! tmux server this process talks to.

use std::path::PathBuf;

use crate::error::Error;
use crate::paths::orchestra_home;
use crate::state::Store;
use crate::tmux::{Server, Tmux};

/// What every command (and the domain code it calls) may need from its environment.
pub struct Context {
    pub home: PathBuf,
    pub server: Server,
}

impl Context {
    /// Refuses (bad input) when there is no home to be had or the event retention is not
    /// a duration; an existing home that others may read is made private first.
    pub fn from_env(socket: Option<PathBuf>) -> Result<Context, Error> {
        let home = orchestra_home().map_err(|e| Error::BadInput(e.to_string()))?;
        crate::state::events_retention().map_err(|e| Error::BadInput(e.to_string()))?;
        crate::paths::secure_home(&home);
        Ok(Context {
            home,
            server: Server::resolve(socket.as_deref()),
        })
    }

    pub fn store(&self) -> Result<Store, Error> {
        Ok(Store::open(&self.home)?)
    }

    pub fn tmux(&self) -> Tmux {
        Tmux::new(&self.server)
    }

    /// The screen rules: built-in, with `$ORCHESTRA_HOME/agents.toml` laid over them.
    pub fn rules(&self) -> Result<crate::agent::rules::Rules, Error> {
        crate::agent::rules::Rules::load(&self.home).map_err(|e| Error::BadInput(e.to_string()))
    }
}
