//! What a client learns about the server it talks to, once, so that every later command can
//! act on it without asking again: the API generation, and whether Apps keep the fields the
//! caller depends on (spec §13 row 1: the MC silently drops fields it does not know).

use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::client::Client;
use crate::error::ApiError;

/// How long learnt facts are trusted before they are checked again: a controller upgrade must
/// be noticed within a day.
pub const FACTS_LIFETIME_SECS: u64 = 24 * 3600;

/// The AppInst key generation of a Master Controller (spec §0.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ApiGeneration {
    /// Cloudlet inside the AppInst key; no zones (before 2024-09).
    Gen2,
    /// `{name, organization}` keys; placement through `zone_key` (2024-09 on).
    Gen3,
}

impl std::fmt::Display for ApiGeneration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ApiGeneration::Gen2 => "Gen2 (cloudlet keys, no zones)",
            ApiGeneration::Gen3 => "Gen3 (zones)",
        })
    }
}

/// Facts about one server, with when they were learnt. `None` means "not known yet".
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerFacts {
    /// The API generation.
    #[serde(default)]
    pub generation: Option<ApiGeneration>,
    /// Apps keep `env_vars` and `secret_env_vars` (MC from 2024-03-28, `dc989293b`).
    #[serde(default)]
    pub keeps_env_vars: Option<bool>,
    /// Apps keep `username` and `credentials` for image pulls (MC from 2025-10-17, `d10fb0002`).
    #[serde(default)]
    pub keeps_pull_credentials: Option<bool>,
    /// Unix time the facts were learnt.
    #[serde(default)]
    pub learnt_at: u64,
}

impl ServerFacts {
    /// True while the facts are young enough to act on.
    pub fn is_fresh(&self) -> bool {
        now().saturating_sub(self.learnt_at) < FACTS_LIFETIME_SECS
    }
}

pub(crate) fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

impl Client {
    /// What is known about the server (from this process or the token store).
    pub fn facts(&self) -> ServerFacts {
        self.facts_slot().clone()
    }

    /// Records something learnt about the server, here and in the token store.
    pub fn learn(&self, update: impl FnOnce(&mut ServerFacts)) {
        let facts = {
            let mut slot = self.facts_slot();
            update(&mut slot);
            slot.learnt_at = now();
            slot.clone()
        };
        if let Some(store) = self.token_store() {
            store.save_facts(&facts);
        }
    }

    /// The server's API generation: `ShowZone` answers on Gen3 and is an unknown route (404) on
    /// Gen2. Asked once; the answer is kept with the token.
    pub async fn api_generation(&self) -> Result<ApiGeneration, ApiError> {
        if let Some(generation) = self.facts().generation {
            return Ok(generation);
        }
        Ok(self.generation_and_zones().await?.0)
    }

    /// Asks `ShowZone` and learns the API generation from it (as [`Client::api_generation`]),
    /// returning the zones too (`None` on Gen2), for a caller that needs both.
    pub async fn generation_and_zones(
        &self,
    ) -> Result<(ApiGeneration, Option<Vec<crate::models::Site>>), ApiError> {
        let answer = match self.show_zones().await {
            Ok(zones) => (ApiGeneration::Gen3, Some(zones)),
            Err(e) if e.status == Some(404) => (ApiGeneration::Gen2, None),
            Err(e) => return Err(e),
        };
        self.learn(|f| f.generation = Some(answer.0));
        Ok(answer)
    }
}
