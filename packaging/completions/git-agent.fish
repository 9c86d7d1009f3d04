# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_git_agent_global_optspecs
    string join \n cwd= no-redact h/help V/version
end

function __fish_git_agent_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_git_agent_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_git_agent_using_subcommand
    set -l cmd (__fish_git_agent_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c git-agent -n "__fish_git_agent_needs_command" -l cwd -d 'Run as if git-agent was started in <directory> (before the command only)' -r
complete -c git-agent -n "__fish_git_agent_needs_command" -l no-redact -d 'Send secrets to the model and embeddings servers unredacted, for this invocation only'
complete -c git-agent -n "__fish_git_agent_needs_command" -s h -l help -d 'Print help'
complete -c git-agent -n "__fish_git_agent_needs_command" -s V -l version -d 'Print version'
complete -c git-agent -n "__fish_git_agent_needs_command" -f -a "project_id" -d 'Print the project identifier shared by search metadata and task records'
complete -c git-agent -n "__fish_git_agent_needs_command" -f -a "config" -d 'Read or change the global configuration (index.remote, search.embeddings, search.model_dir, redact.allow)'
complete -c git-agent -n "__fish_git_agent_needs_command" -f -a "review" -d 'Launch a detached, evidence-backed read-only code review'
complete -c git-agent -n "__fish_git_agent_needs_command" -f -a "simplify" -d 'Launch a detached read-only simplification audit'
complete -c git-agent -n "__fish_git_agent_needs_command" -f -a "commit-msg" -d 'Write a commit message for the staged changes; stdout is the message only'
complete -c git-agent -n "__fish_git_agent_needs_command" -f -a "commit" -d 'Write a commit message for the staged changes, then run git commit with it'
complete -c git-agent -n "__fish_git_agent_needs_command" -f -a "hook" -d 'Install, remove or inspect the prepare-commit-msg hook that fills `git commit`\'s message'
complete -c git-agent -n "__fish_git_agent_needs_command" -f -a "search" -d 'Embedding-backed code search over the files on disk'
complete -c git-agent -n "__fish_git_agent_needs_command" -f -a "pr-message" -d 'Write the squash-merge message of the current branch versus origin/HEAD; stdout is the message only'
complete -c git-agent -n "__fish_git_agent_needs_command" -f -a "release-note" -d 'Write GitHub release notes for <base>..<release>, or since the latest version tag (patch|minor|major)'
complete -c git-agent -n "__fish_git_agent_needs_command" -f -a "explore" -d 'Answer a codebase question with grounded findings; stdout is one JSON object'
complete -c git-agent -n "__fish_git_agent_needs_command" -f -a "index" -d 'Share search indexes through the index.remote repository (sync, migrate, gc)'
complete -c git-agent -n "__fish_git_agent_needs_command" -f -a "mcp" -d 'Serve search, explore, review and task tools to coding agents over MCP (stdio)'
complete -c git-agent -n "__fish_git_agent_needs_command" -f -a "completions" -d 'Print a shell completion script for bash, zsh or fish'
complete -c git-agent -n "__fish_git_agent_using_subcommand project_id" -l no-redact -d 'Send secrets to the model and embeddings servers unredacted, for this invocation only'
complete -c git-agent -n "__fish_git_agent_using_subcommand project_id" -s h -l help -d 'Print help'
complete -c git-agent -n "__fish_git_agent_using_subcommand project_id" -s V -l version -d 'Print version'
complete -c git-agent -n "__fish_git_agent_using_subcommand config" -l unset -d 'Remove the setting'
complete -c git-agent -n "__fish_git_agent_using_subcommand config" -l no-redact -d 'Send secrets to the model and embeddings servers unredacted, for this invocation only'
complete -c git-agent -n "__fish_git_agent_using_subcommand config" -s h -l help -d 'Print help'
complete -c git-agent -n "__fish_git_agent_using_subcommand config" -s V -l version -d 'Print version'
complete -c git-agent -n "__fish_git_agent_using_subcommand review" -l base -d 'Inspect HEAD against its merge base with <ref> (what a pull request would contain)' -r
complete -c git-agent -n "__fish_git_agent_using_subcommand review" -l commit -d 'Inspect one commit against its first parent' -r
complete -c git-agent -n "__fish_git_agent_using_subcommand review" -l wait -d 'Wait for a detached task and print its report' -r
complete -c git-agent -n "__fish_git_agent_using_subcommand review" -l follow-up -d 'Continue a successful detached task of this command and workspace with a new prompt' -r
complete -c git-agent -n "__fish_git_agent_using_subcommand review" -l depth -d 'Automatic inspection depth and default reasoning effort (default balanced)' -r -f -a "fast\t''
balanced\t''
thorough\t''"
complete -c git-agent -n "__fish_git_agent_using_subcommand review" -l max-steps -d 'Exact model-step ceiling, overriding the automatic inspection depth' -r
complete -c git-agent -n "__fish_git_agent_using_subcommand review" -l max-web-searches -d 'Hosted web searches per model response (default 4 with an API key, uncapped with ChatGPT sign-in)' -r
complete -c git-agent -n "__fish_git_agent_using_subcommand review" -l model -d 'Model identifier (default: OPENAI_MODEL, then the command\'s default)' -r
complete -c git-agent -n "__fish_git_agent_using_subcommand review" -l base-url -d 'Provider base URL (overrides OPENAI_BASE_URL and the ChatGPT default)' -r
complete -c git-agent -n "__fish_git_agent_using_subcommand review" -l timeout -d 'Deadline for the provider client and the whole run, such as 90s, 2m or 1m30s' -r
complete -c git-agent -n "__fish_git_agent_using_subcommand review" -l guidance-family -d 'Guidance family: auto (AGENTS, else CLAUDE), agents, claude or none' -r -f -a "auto\t''
agents\t''
claude\t''
none\t''"
complete -c git-agent -n "__fish_git_agent_using_subcommand review" -l append-prompt -d 'A lower-priority hint appended to the task prompt as escaped data' -r
complete -c git-agent -n "__fish_git_agent_using_subcommand review" -l codebase -d 'Inspect the full codebase'
complete -c git-agent -n "__fish_git_agent_using_subcommand review" -l uncommitted -d 'Inspect all dirty changes: staged, unstaged and untracked (default)'
complete -c git-agent -n "__fish_git_agent_using_subcommand review" -l staged -d 'Inspect staged changes only'
complete -c git-agent -n "__fish_git_agent_using_subcommand review" -l dry-run -d 'Replace the provider with a deterministic fixture (preparation and launch stay real)'
complete -c git-agent -n "__fish_git_agent_using_subcommand review" -l clippy -d 'Review only: also run `cargo clippy` on the packages of changed .rs files (compiles the code: build scripts and proc macros run)'
complete -c git-agent -n "__fish_git_agent_using_subcommand review" -l help-agent -d 'Show help limited to agent-facing flags'
complete -c git-agent -n "__fish_git_agent_using_subcommand review" -l fast -d 'Ask for the priority service tier (service_tier=priority)'
complete -c git-agent -n "__fish_git_agent_using_subcommand review" -l low -d 'Send reasoning.effort=low'
complete -c git-agent -n "__fish_git_agent_using_subcommand review" -l medium -d 'Send reasoning.effort=medium'
complete -c git-agent -n "__fish_git_agent_using_subcommand review" -l high -d 'Send reasoning.effort=high'
complete -c git-agent -n "__fish_git_agent_using_subcommand review" -l xhigh -d 'Send reasoning.effort=xhigh'
complete -c git-agent -n "__fish_git_agent_using_subcommand review" -l debug -d 'Write diagnostics (trace, phase timings) to stderr'
complete -c git-agent -n "__fish_git_agent_using_subcommand review" -l no-redact -d 'Send secrets to the model and embeddings servers unredacted, for this invocation only'
complete -c git-agent -n "__fish_git_agent_using_subcommand review" -s h -l help -d 'Print help'
complete -c git-agent -n "__fish_git_agent_using_subcommand review" -s V -l version -d 'Print version'
complete -c git-agent -n "__fish_git_agent_using_subcommand simplify" -l base -d 'Inspect HEAD against its merge base with <ref> (what a pull request would contain)' -r
complete -c git-agent -n "__fish_git_agent_using_subcommand simplify" -l commit -d 'Inspect one commit against its first parent' -r
complete -c git-agent -n "__fish_git_agent_using_subcommand simplify" -l wait -d 'Wait for a detached task and print its report' -r
complete -c git-agent -n "__fish_git_agent_using_subcommand simplify" -l follow-up -d 'Continue a successful detached task of this command and workspace with a new prompt' -r
complete -c git-agent -n "__fish_git_agent_using_subcommand simplify" -l depth -d 'Automatic inspection depth and default reasoning effort (default balanced)' -r -f -a "fast\t''
balanced\t''
thorough\t''"
complete -c git-agent -n "__fish_git_agent_using_subcommand simplify" -l max-steps -d 'Exact model-step ceiling, overriding the automatic inspection depth' -r
complete -c git-agent -n "__fish_git_agent_using_subcommand simplify" -l max-web-searches -d 'Hosted web searches per model response (default 4 with an API key, uncapped with ChatGPT sign-in)' -r
complete -c git-agent -n "__fish_git_agent_using_subcommand simplify" -l model -d 'Model identifier (default: OPENAI_MODEL, then the command\'s default)' -r
complete -c git-agent -n "__fish_git_agent_using_subcommand simplify" -l base-url -d 'Provider base URL (overrides OPENAI_BASE_URL and the ChatGPT default)' -r
complete -c git-agent -n "__fish_git_agent_using_subcommand simplify" -l timeout -d 'Deadline for the provider client and the whole run, such as 90s, 2m or 1m30s' -r
complete -c git-agent -n "__fish_git_agent_using_subcommand simplify" -l guidance-family -d 'Guidance family: auto (AGENTS, else CLAUDE), agents, claude or none' -r -f -a "auto\t''
agents\t''
claude\t''
none\t''"
complete -c git-agent -n "__fish_git_agent_using_subcommand simplify" -l append-prompt -d 'A lower-priority hint appended to the task prompt as escaped data' -r
complete -c git-agent -n "__fish_git_agent_using_subcommand simplify" -l codebase -d 'Inspect the full codebase'
complete -c git-agent -n "__fish_git_agent_using_subcommand simplify" -l uncommitted -d 'Inspect all dirty changes: staged, unstaged and untracked (default)'
complete -c git-agent -n "__fish_git_agent_using_subcommand simplify" -l staged -d 'Inspect staged changes only'
complete -c git-agent -n "__fish_git_agent_using_subcommand simplify" -l dry-run -d 'Replace the provider with a deterministic fixture (preparation and launch stay real)'
complete -c git-agent -n "__fish_git_agent_using_subcommand simplify" -l clippy -d 'Review only: also run `cargo clippy` on the packages of changed .rs files (compiles the code: build scripts and proc macros run)'
complete -c git-agent -n "__fish_git_agent_using_subcommand simplify" -l help-agent -d 'Show help limited to agent-facing flags'
complete -c git-agent -n "__fish_git_agent_using_subcommand simplify" -l fast -d 'Ask for the priority service tier (service_tier=priority)'
complete -c git-agent -n "__fish_git_agent_using_subcommand simplify" -l low -d 'Send reasoning.effort=low'
complete -c git-agent -n "__fish_git_agent_using_subcommand simplify" -l medium -d 'Send reasoning.effort=medium'
complete -c git-agent -n "__fish_git_agent_using_subcommand simplify" -l high -d 'Send reasoning.effort=high'
complete -c git-agent -n "__fish_git_agent_using_subcommand simplify" -l xhigh -d 'Send reasoning.effort=xhigh'
complete -c git-agent -n "__fish_git_agent_using_subcommand simplify" -l debug -d 'Write diagnostics (trace, phase timings) to stderr'
complete -c git-agent -n "__fish_git_agent_using_subcommand simplify" -l no-redact -d 'Send secrets to the model and embeddings servers unredacted, for this invocation only'
complete -c git-agent -n "__fish_git_agent_using_subcommand simplify" -s h -l help -d 'Print help'
complete -c git-agent -n "__fish_git_agent_using_subcommand simplify" -s V -l version -d 'Print version'
complete -c git-agent -n "__fish_git_agent_using_subcommand commit-msg" -l model -d 'Model identifier (default: OPENAI_MODEL, then the command\'s default)' -r
complete -c git-agent -n "__fish_git_agent_using_subcommand commit-msg" -l base-url -d 'Provider base URL (overrides OPENAI_BASE_URL and the ChatGPT default)' -r
complete -c git-agent -n "__fish_git_agent_using_subcommand commit-msg" -l timeout -d 'Deadline for the provider client and the whole run, such as 90s, 2m or 1m30s' -r
complete -c git-agent -n "__fish_git_agent_using_subcommand commit-msg" -l guidance-family -d 'Guidance family: auto (AGENTS, else CLAUDE), agents, claude or none' -r -f -a "auto\t''
agents\t''
claude\t''
none\t''"
complete -c git-agent -n "__fish_git_agent_using_subcommand commit-msg" -l append-prompt -d 'A lower-priority hint appended to the task prompt as escaped data' -r
complete -c git-agent -n "__fish_git_agent_using_subcommand commit-msg" -l max-steps -d 'Maximum model steps of the agent loop (default 30)' -r
complete -c git-agent -n "__fish_git_agent_using_subcommand commit-msg" -l pprof -d 'Serve a diagnostics index at <addr> (host:port) while the command runs' -r
complete -c git-agent -n "__fish_git_agent_using_subcommand commit-msg" -l amend -d 'Describe the final amended HEAD commit (HEAD plus the staged changes) instead of the staged changes alone'
complete -c git-agent -n "__fish_git_agent_using_subcommand commit-msg" -l fast -d 'Ask for the priority service tier (service_tier=priority)'
complete -c git-agent -n "__fish_git_agent_using_subcommand commit-msg" -l low -d 'Send reasoning.effort=low'
complete -c git-agent -n "__fish_git_agent_using_subcommand commit-msg" -l medium -d 'Send reasoning.effort=medium'
complete -c git-agent -n "__fish_git_agent_using_subcommand commit-msg" -l high -d 'Send reasoning.effort=high'
complete -c git-agent -n "__fish_git_agent_using_subcommand commit-msg" -l xhigh -d 'Send reasoning.effort=xhigh'
complete -c git-agent -n "__fish_git_agent_using_subcommand commit-msg" -l debug -d 'Write diagnostics (trace, phase timings) to stderr'
complete -c git-agent -n "__fish_git_agent_using_subcommand commit-msg" -l no-redact -d 'Send secrets to the model and embeddings servers unredacted, for this invocation only'
complete -c git-agent -n "__fish_git_agent_using_subcommand commit-msg" -s h -l help -d 'Print help'
complete -c git-agent -n "__fish_git_agent_using_subcommand commit-msg" -s V -l version -d 'Print version'
complete -c git-agent -n "__fish_git_agent_using_subcommand commit" -l model -d 'Model identifier (default: OPENAI_MODEL, then the command\'s default)' -r
complete -c git-agent -n "__fish_git_agent_using_subcommand commit" -l base-url -d 'Provider base URL (overrides OPENAI_BASE_URL and the ChatGPT default)' -r
complete -c git-agent -n "__fish_git_agent_using_subcommand commit" -l timeout -d 'Deadline for the provider client and the whole run, such as 90s, 2m or 1m30s' -r
complete -c git-agent -n "__fish_git_agent_using_subcommand commit" -l guidance-family -d 'Guidance family: auto (AGENTS, else CLAUDE), agents, claude or none' -r -f -a "auto\t''
agents\t''
claude\t''
none\t''"
complete -c git-agent -n "__fish_git_agent_using_subcommand commit" -l append-prompt -d 'A lower-priority hint appended to the task prompt as escaped data' -r
complete -c git-agent -n "__fish_git_agent_using_subcommand commit" -l max-steps -d 'Maximum model steps of the agent loop (default 30)' -r
complete -c git-agent -n "__fish_git_agent_using_subcommand commit" -l pprof -d 'Serve a diagnostics index at <addr> (host:port) while the command runs' -r
complete -c git-agent -n "__fish_git_agent_using_subcommand commit" -l amend -d 'Describe the final amended HEAD commit (HEAD plus the staged changes) instead of the staged changes alone'
complete -c git-agent -n "__fish_git_agent_using_subcommand commit" -l fast -d 'Ask for the priority service tier (service_tier=priority)'
complete -c git-agent -n "__fish_git_agent_using_subcommand commit" -l low -d 'Send reasoning.effort=low'
complete -c git-agent -n "__fish_git_agent_using_subcommand commit" -l medium -d 'Send reasoning.effort=medium'
complete -c git-agent -n "__fish_git_agent_using_subcommand commit" -l high -d 'Send reasoning.effort=high'
complete -c git-agent -n "__fish_git_agent_using_subcommand commit" -l xhigh -d 'Send reasoning.effort=xhigh'
complete -c git-agent -n "__fish_git_agent_using_subcommand commit" -l debug -d 'Write diagnostics (trace, phase timings) to stderr'
complete -c git-agent -n "__fish_git_agent_using_subcommand commit" -s i -l interactive -d 'Show the message as it is written, then ask: accept, edit, regenerate or quit (needs a terminal)'
complete -c git-agent -n "__fish_git_agent_using_subcommand commit" -l no-redact -d 'Send secrets to the model and embeddings servers unredacted, for this invocation only'
complete -c git-agent -n "__fish_git_agent_using_subcommand commit" -s h -l help -d 'Print help'
complete -c git-agent -n "__fish_git_agent_using_subcommand commit" -s V -l version -d 'Print version'
complete -c git-agent -n "__fish_git_agent_using_subcommand hook; and not __fish_seen_subcommand_from install uninstall status run" -l no-redact -d 'Send secrets to the model and embeddings servers unredacted, for this invocation only'
complete -c git-agent -n "__fish_git_agent_using_subcommand hook; and not __fish_seen_subcommand_from install uninstall status run" -s h -l help -d 'Print help'
complete -c git-agent -n "__fish_git_agent_using_subcommand hook; and not __fish_seen_subcommand_from install uninstall status run" -s V -l version -d 'Print version'
complete -c git-agent -n "__fish_git_agent_using_subcommand hook; and not __fish_seen_subcommand_from install uninstall status run" -f -a "install" -d 'Write the prepare-commit-msg hook into the repository\'s hooks folder (core.hooksPath honoured)'
complete -c git-agent -n "__fish_git_agent_using_subcommand hook; and not __fish_seen_subcommand_from install uninstall status run" -f -a "uninstall" -d 'Remove the prepare-commit-msg hook, if git-agent wrote it'
complete -c git-agent -n "__fish_git_agent_using_subcommand hook; and not __fish_seen_subcommand_from install uninstall status run" -f -a "status" -d 'Say whether the prepare-commit-msg hook is git-agent\'s, another program\'s, or absent'
complete -c git-agent -n "__fish_git_agent_using_subcommand hook; and not __fish_seen_subcommand_from install uninstall status run" -f -a "run" -d 'What the installed hook runs: fill <file> with a generated message when git has none'
complete -c git-agent -n "__fish_git_agent_using_subcommand hook; and __fish_seen_subcommand_from install" -l force -d 'Replace a prepare-commit-msg hook that git-agent did not write'
complete -c git-agent -n "__fish_git_agent_using_subcommand hook; and __fish_seen_subcommand_from install" -l no-redact -d 'Send secrets to the model and embeddings servers unredacted, for this invocation only'
complete -c git-agent -n "__fish_git_agent_using_subcommand hook; and __fish_seen_subcommand_from install" -s h -l help -d 'Print help'
complete -c git-agent -n "__fish_git_agent_using_subcommand hook; and __fish_seen_subcommand_from install" -s V -l version -d 'Print version'
complete -c git-agent -n "__fish_git_agent_using_subcommand hook; and __fish_seen_subcommand_from uninstall" -l no-redact -d 'Send secrets to the model and embeddings servers unredacted, for this invocation only'
complete -c git-agent -n "__fish_git_agent_using_subcommand hook; and __fish_seen_subcommand_from uninstall" -s h -l help -d 'Print help'
complete -c git-agent -n "__fish_git_agent_using_subcommand hook; and __fish_seen_subcommand_from uninstall" -s V -l version -d 'Print version'
complete -c git-agent -n "__fish_git_agent_using_subcommand hook; and __fish_seen_subcommand_from status" -l no-redact -d 'Send secrets to the model and embeddings servers unredacted, for this invocation only'
complete -c git-agent -n "__fish_git_agent_using_subcommand hook; and __fish_seen_subcommand_from status" -s h -l help -d 'Print help'
complete -c git-agent -n "__fish_git_agent_using_subcommand hook; and __fish_seen_subcommand_from status" -s V -l version -d 'Print version'
complete -c git-agent -n "__fish_git_agent_using_subcommand hook; and __fish_seen_subcommand_from run" -l no-redact -d 'Send secrets to the model and embeddings servers unredacted, for this invocation only'
complete -c git-agent -n "__fish_git_agent_using_subcommand hook; and __fish_seen_subcommand_from run" -s h -l help -d 'Print help'
complete -c git-agent -n "__fish_git_agent_using_subcommand hook; and __fish_seen_subcommand_from run" -s V -l version -d 'Print version'
complete -c git-agent -n "__fish_git_agent_using_subcommand search" -l rev -d 'Search the committed tree of this revision instead of the files on disk' -r
complete -c git-agent -n "__fish_git_agent_using_subcommand search" -l scope -d 'Comma-separated paths, relative to the current directory, to search or index' -r
complete -c git-agent -n "__fish_git_agent_using_subcommand search" -l limit -d 'Maximum number of results, 1..100 (default 20)' -r
complete -c git-agent -n "__fish_git_agent_using_subcommand search" -l format -d 'Output format: json|brief for search (default json, brief with --agent), text|json for --ls, tree|json for --ls-files' -r
complete -c git-agent -n "__fish_git_agent_using_subcommand search" -l min-score -d 'Minimum final hybrid score, 0 < score <= 1 (default 0.70)' -r
complete -c git-agent -n "__fish_git_agent_using_subcommand search" -l embedding-model -d 'Embedding model (default OPENAI_EMBEDDING_MODEL, else text-embedding-3-small)' -r
complete -c git-agent -n "__fish_git_agent_using_subcommand search" -l embedding-dimensions -d 'Embedding dimensions (default OPENAI_EMBEDDING_DIMENSIONS, else 1024)' -r
complete -c git-agent -n "__fish_git_agent_using_subcommand search" -l base-url -d 'Embeddings base URL (default OPENAI_EMBEDDING_BASE_URL, OPENAI_BASE_URL, https://api.openai.com/v1)' -r
complete -c git-agent -n "__fish_git_agent_using_subcommand search" -l timeout -d 'Per-request timeout for the embeddings endpoint, such as 30s or 2m (default 2m)' -r
complete -c git-agent -n "__fish_git_agent_using_subcommand search" -l remote -d 'Search a remote Git repository (URL or path) through its cached bare clone' -r
complete -c git-agent -n "__fish_git_agent_using_subcommand search" -l code -d 'Search source-code files only'
complete -c git-agent -n "__fish_git_agent_using_subcommand search" -l no-tests -d 'Exclude common test files and test directories from results and --ls-files output'
complete -c git-agent -n "__fish_git_agent_using_subcommand search" -l agent -d 'Serve indexing progress over a private local socket when embeddings need work'
complete -c git-agent -n "__fish_git_agent_using_subcommand search" -l index -d 'Build embeddings for the selected files without searching'
complete -c git-agent -n "__fish_git_agent_using_subcommand search" -l reindex -d 'Rebuild embeddings for the selected files and drop stale cache entries'
complete -c git-agent -n "__fish_git_agent_using_subcommand search" -l ls -d 'List the search indexes of the current project'
complete -c git-agent -n "__fish_git_agent_using_subcommand search" -l ls-files -d 'List the files stored in the selected search index'
complete -c git-agent -n "__fish_git_agent_using_subcommand search" -l debug -d 'Write diagnostic events to stderr'
complete -c git-agent -n "__fish_git_agent_using_subcommand search" -l ls-remotes -d 'List the cached remote repositories'
complete -c git-agent -n "__fish_git_agent_using_subcommand search" -l no-redact -d 'Send secrets to the model and embeddings servers unredacted, for this invocation only'
complete -c git-agent -n "__fish_git_agent_using_subcommand search" -s h -l help -d 'Print help'
complete -c git-agent -n "__fish_git_agent_using_subcommand search" -s V -l version -d 'Print version'
complete -c git-agent -n "__fish_git_agent_using_subcommand pr-message" -l model -d 'Model identifier (default: OPENAI_MODEL, then the command\'s default)' -r
complete -c git-agent -n "__fish_git_agent_using_subcommand pr-message" -l base-url -d 'Provider base URL (overrides OPENAI_BASE_URL and the ChatGPT default)' -r
complete -c git-agent -n "__fish_git_agent_using_subcommand pr-message" -l timeout -d 'Deadline for the provider client and the whole run, such as 90s, 2m or 1m30s' -r
complete -c git-agent -n "__fish_git_agent_using_subcommand pr-message" -l guidance-family -d 'Guidance family: auto (AGENTS, else CLAUDE), agents, claude or none' -r -f -a "auto\t''
agents\t''
claude\t''
none\t''"
complete -c git-agent -n "__fish_git_agent_using_subcommand pr-message" -l append-prompt -d 'A lower-priority hint appended to the task prompt as escaped data' -r
complete -c git-agent -n "__fish_git_agent_using_subcommand pr-message" -l max-steps -d 'Maximum model steps of the agent loop (default 30)' -r
complete -c git-agent -n "__fish_git_agent_using_subcommand pr-message" -l pprof -d 'Serve a diagnostics index at <addr> (host:port) while the command runs' -r
complete -c git-agent -n "__fish_git_agent_using_subcommand pr-message" -l fast -d 'Ask for the priority service tier (service_tier=priority)'
complete -c git-agent -n "__fish_git_agent_using_subcommand pr-message" -l low -d 'Send reasoning.effort=low'
complete -c git-agent -n "__fish_git_agent_using_subcommand pr-message" -l medium -d 'Send reasoning.effort=medium'
complete -c git-agent -n "__fish_git_agent_using_subcommand pr-message" -l high -d 'Send reasoning.effort=high'
complete -c git-agent -n "__fish_git_agent_using_subcommand pr-message" -l xhigh -d 'Send reasoning.effort=xhigh'
complete -c git-agent -n "__fish_git_agent_using_subcommand pr-message" -l debug -d 'Write diagnostics (trace, phase timings) to stderr'
complete -c git-agent -n "__fish_git_agent_using_subcommand pr-message" -l no-redact -d 'Send secrets to the model and embeddings servers unredacted, for this invocation only'
complete -c git-agent -n "__fish_git_agent_using_subcommand pr-message" -s h -l help -d 'Print help'
complete -c git-agent -n "__fish_git_agent_using_subcommand pr-message" -s V -l version -d 'Print version'
complete -c git-agent -n "__fish_git_agent_using_subcommand release-note" -l out -d 'Write the Markdown to <file> (checked writable before anything runs) and stream the trace to stdout' -r
complete -c git-agent -n "__fish_git_agent_using_subcommand release-note" -l model -d 'Model identifier (default: OPENAI_MODEL, then the command\'s default)' -r
complete -c git-agent -n "__fish_git_agent_using_subcommand release-note" -l base-url -d 'Provider base URL (overrides OPENAI_BASE_URL and the ChatGPT default)' -r
complete -c git-agent -n "__fish_git_agent_using_subcommand release-note" -l timeout -d 'Deadline for the provider client and the whole run, such as 90s, 2m or 1m30s' -r
complete -c git-agent -n "__fish_git_agent_using_subcommand release-note" -l guidance-family -d 'Guidance family: auto (AGENTS, else CLAUDE), agents, claude or none' -r -f -a "auto\t''
agents\t''
claude\t''
none\t''"
complete -c git-agent -n "__fish_git_agent_using_subcommand release-note" -l append-prompt -d 'A lower-priority hint appended to the task prompt as escaped data' -r
complete -c git-agent -n "__fish_git_agent_using_subcommand release-note" -l max-steps -d 'Maximum model steps of the agent loop (default 30)' -r
complete -c git-agent -n "__fish_git_agent_using_subcommand release-note" -l pprof -d 'Serve a diagnostics index at <addr> (host:port) while the command runs' -r
complete -c git-agent -n "__fish_git_agent_using_subcommand release-note" -l fast -d 'Ask for the priority service tier (service_tier=priority)'
complete -c git-agent -n "__fish_git_agent_using_subcommand release-note" -l low -d 'Send reasoning.effort=low'
complete -c git-agent -n "__fish_git_agent_using_subcommand release-note" -l medium -d 'Send reasoning.effort=medium'
complete -c git-agent -n "__fish_git_agent_using_subcommand release-note" -l high -d 'Send reasoning.effort=high'
complete -c git-agent -n "__fish_git_agent_using_subcommand release-note" -l xhigh -d 'Send reasoning.effort=xhigh'
complete -c git-agent -n "__fish_git_agent_using_subcommand release-note" -l debug -d 'Write diagnostics (trace, phase timings) to stderr'
complete -c git-agent -n "__fish_git_agent_using_subcommand release-note" -l no-redact -d 'Send secrets to the model and embeddings servers unredacted, for this invocation only'
complete -c git-agent -n "__fish_git_agent_using_subcommand release-note" -s h -l help -d 'Print help'
complete -c git-agent -n "__fish_git_agent_using_subcommand release-note" -s V -l version -d 'Print version'
complete -c git-agent -n "__fish_git_agent_using_subcommand explore" -l for -d 'What the answer should prioritize' -r -f -a "diagnose\t'The reproducer, failure mechanism, bottleneck or regression cause'
change\t'The implementation boundary, affected behavior and focused validation'
behavior\t'Current semantics, contracts and invariants'
owner\t'The authoritative implementation, callers and subsystem boundaries'"
complete -c git-agent -n "__fish_git_agent_using_subcommand explore" -l follow-up -d 'Continue the session of a previous explore result' -r
complete -c git-agent -n "__fish_git_agent_using_subcommand explore" -l debug -d 'Write explore.phase timings and the console trace to stderr'
complete -c git-agent -n "__fish_git_agent_using_subcommand explore" -l fast -d 'Send service_tier=priority with the Responses API request'
complete -c git-agent -n "__fish_git_agent_using_subcommand explore" -l no-redact -d 'Send secrets to the model and embeddings servers unredacted, for this invocation only'
complete -c git-agent -n "__fish_git_agent_using_subcommand explore" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c git-agent -n "__fish_git_agent_using_subcommand explore" -s V -l version -d 'Print version'
complete -c git-agent -n "__fish_git_agent_using_subcommand index; and not __fish_seen_subcommand_from sync migrate gc" -l no-redact -d 'Send secrets to the model and embeddings servers unredacted, for this invocation only'
complete -c git-agent -n "__fish_git_agent_using_subcommand index; and not __fish_seen_subcommand_from sync migrate gc" -s h -l help -d 'Print help'
complete -c git-agent -n "__fish_git_agent_using_subcommand index; and not __fish_seen_subcommand_from sync migrate gc" -s V -l version -d 'Print version'
complete -c git-agent -n "__fish_git_agent_using_subcommand index; and not __fish_seen_subcommand_from sync migrate gc" -f -a "sync" -d 'Export every completed revision index to index.remote'
complete -c git-agent -n "__fish_git_agent_using_subcommand index; and not __fish_seen_subcommand_from sync migrate gc" -f -a "migrate" -d 'Convert the index.remote repository from schema v1 to schema v2'
complete -c git-agent -n "__fish_git_agent_using_subcommand index; and not __fish_seen_subcommand_from sync migrate gc" -f -a "gc" -d 'Remove unreachable index data, locally and in index.remote'
complete -c git-agent -n "__fish_git_agent_using_subcommand index; and __fish_seen_subcommand_from sync" -l no-redact -d 'Send secrets to the model and embeddings servers unredacted, for this invocation only'
complete -c git-agent -n "__fish_git_agent_using_subcommand index; and __fish_seen_subcommand_from sync" -s h -l help -d 'Print help'
complete -c git-agent -n "__fish_git_agent_using_subcommand index; and __fish_seen_subcommand_from sync" -s V -l version -d 'Print version'
complete -c git-agent -n "__fish_git_agent_using_subcommand index; and __fish_seen_subcommand_from migrate" -l to -d 'The target schema; only v2 exists' -r -f -a "v2\t''"
complete -c git-agent -n "__fish_git_agent_using_subcommand index; and __fish_seen_subcommand_from migrate" -l dry-run -d 'Build and validate the migration in temporary storage; commit and push nothing'
complete -c git-agent -n "__fish_git_agent_using_subcommand index; and __fish_seen_subcommand_from migrate" -l no-redact -d 'Send secrets to the model and embeddings servers unredacted, for this invocation only'
complete -c git-agent -n "__fish_git_agent_using_subcommand index; and __fish_seen_subcommand_from migrate" -s h -l help -d 'Print help'
complete -c git-agent -n "__fish_git_agent_using_subcommand index; and __fish_seen_subcommand_from migrate" -s V -l version -d 'Print version'
complete -c git-agent -n "__fish_git_agent_using_subcommand index; and __fish_seen_subcommand_from gc" -l dry-run -d 'Report what would be removed; change no byte and no modification time'
complete -c git-agent -n "__fish_git_agent_using_subcommand index; and __fish_seen_subcommand_from gc" -l no-redact -d 'Send secrets to the model and embeddings servers unredacted, for this invocation only'
complete -c git-agent -n "__fish_git_agent_using_subcommand index; and __fish_seen_subcommand_from gc" -s h -l help -d 'Print help'
complete -c git-agent -n "__fish_git_agent_using_subcommand index; and __fish_seen_subcommand_from gc" -s V -l version -d 'Print version'
complete -c git-agent -n "__fish_git_agent_using_subcommand mcp" -l no-redact -d 'Send secrets to the model and embeddings servers unredacted, for this invocation only'
complete -c git-agent -n "__fish_git_agent_using_subcommand mcp" -s h -l help -d 'Print help'
complete -c git-agent -n "__fish_git_agent_using_subcommand mcp" -s V -l version -d 'Print version'
complete -c git-agent -n "__fish_git_agent_using_subcommand completions" -l no-redact -d 'Send secrets to the model and embeddings servers unredacted, for this invocation only'
complete -c git-agent -n "__fish_git_agent_using_subcommand completions" -s h -l help -d 'Print help'
complete -c git-agent -n "__fish_git_agent_using_subcommand completions" -s V -l version -d 'Print version'
