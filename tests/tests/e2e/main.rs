//! End-to-end tests: the real `git-agent` and `gitagentd` binaries in
//! isolated user environments, compared with the spec's stdout, stderr and
//! exit-code contracts. One test binary; one module per area.

mod commit;
mod commit_context;
mod commit_interactive;
mod commit_msg;
mod config;
mod cwd;
mod daemon;
mod explore;
mod explore_follow_up;
mod explore_retrieval;
mod first_hour;
mod follow_up;
mod grpc_authority;
mod hook;
mod index_fixtures;
mod index_gc;
mod index_migrate;
mod index_sync;
mod inspection;
mod install;
mod line_counts;
mod local_embeddings;
mod mcp;
mod pr_message;
mod project_id;
mod proxy;
mod redaction;
mod release_note;
mod review;
mod search;
mod search_index;
mod search_migrate;
mod search_remote;
mod search_revision;
mod task_http;
