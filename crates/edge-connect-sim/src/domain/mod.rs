//! Layer 3: what the controller decides, independent of HTTP and of the running simulator:
//! name rules, App validation and normalisation, AppInst placement and construction, the
//! AppInst state machines, the generated manifest, access ports and login tokens.
//!
//! | Module | Job |
//! |---|---|
//! | `names` | the controller's name rules and sanitisers |
//! | `app_config` | `App.Validate`, `configureApp`, resources from the flavor |
//! | `app_build` | fields stamped on a new App; seeded Apps |
//! | `appinst_build` | AppInst key rules, placement, the new instance; seeded instances |
//! | `appinst_lifecycle` | create/delete state machines and their progress lines |
//! | `startup` | what the site reports while it starts a container (pod wait, docker pull) |
//! | `manifest` | the `kubernetes-basic` manifest generator |
//! | `ports` | the `access_ports` syntax |
//! | `tokens` | JWT issue and check |
//! | `user_manifest` | an App's own manifest: CreateApp's checks, the CRM's decode, Pod Security admission |

pub(crate) mod app_build;
pub(crate) mod app_config;
pub(crate) mod appinst_build;
pub(crate) mod appinst_lifecycle;
pub(crate) mod container;
pub(crate) mod manifest;
pub(crate) mod names;
pub(crate) mod ports;
pub(crate) mod startup;
pub(crate) mod template;
pub(crate) mod tokens;
pub(crate) mod user_manifest;
pub(crate) mod yaml_word;
