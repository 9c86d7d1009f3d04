#compdef git-agent

autoload -U is-at-least

_git-agent() {
    typeset -A opt_args
    typeset -a _arguments_options
    local ret=1

    if is-at-least 5.2; then
        _arguments_options=(-s -S -C)
    else
        _arguments_options=(-s -C)
    fi

    local context curcontext="$curcontext" state line
    _arguments "${_arguments_options[@]}" : \
'--cwd=[Run as if git-agent was started in <directory> (before the command only)]:directory:_default' \
'--no-redact[Send secrets to the model and embeddings servers unredacted, for this invocation only]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
":: :_git-agent_commands" \
"*::: :->git-agent" \
&& ret=0
    case $state in
    (git-agent)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:git-agent-command-$line[1]:"
        case $line[1] in
            (project_id)
_arguments "${_arguments_options[@]}" : \
'--no-redact[Send secrets to the model and embeddings servers unredacted, for this invocation only]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
;;
(config)
_arguments "${_arguments_options[@]}" : \
'--unset[Remove the setting]' \
'--no-redact[Send secrets to the model and embeddings servers unredacted, for this invocation only]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
':key -- The configuration key\: index.remote, search.embeddings, search.model_dir or redact.allow:_default' \
'::value -- The new value; without it the current value is printed:_default' \
&& ret=0
;;
(review)
_arguments "${_arguments_options[@]}" : \
'--base=[Inspect HEAD against its merge base with <ref> (what a pull request would contain)]:ref:_default' \
'--commit=[Inspect one commit against its first parent]:rev:_default' \
'(--codebase --uncommitted --staged --base --commit --depth --max-steps --max-web-searches --dry-run --clippy --model --fast --low --medium --high --xhigh --base-url --timeout --guidance-family --append-prompt --debug)--wait=[Wait for a detached task and print its report]:id:_default' \
'(--codebase --uncommitted --staged --base --commit --clippy --wait --depth --max-steps --max-web-searches --dry-run --model --low --medium --high --xhigh --base-url --timeout --guidance-family --append-prompt)--follow-up=[Continue a successful detached task of this command and workspace with a new prompt]:turn-id:_default' \
'(--max-steps)--depth=[Automatic inspection depth and default reasoning effort (default balanced)]:fast|balanced|thorough:(fast balanced thorough)' \
'--max-steps=[Exact model-step ceiling, overriding the automatic inspection depth]:n:_default' \
'--max-web-searches=[Hosted web searches per model response (default 4 with an API key, uncapped with ChatGPT sign-in)]:n:_default' \
'--model=[Model identifier (default\: OPENAI_MODEL, then the command'\''s default)]:model:_default' \
'--base-url=[Provider base URL (overrides OPENAI_BASE_URL and the ChatGPT default)]:url:_default' \
'--timeout=[Deadline for the provider client and the whole run, such as 90s, 2m or 1m30s]:duration:_default' \
'--guidance-family=[Guidance family\: auto (AGENTS, else CLAUDE), agents, claude or none]:family:(auto agents claude none)' \
'--append-prompt=[A lower-priority hint appended to the task prompt as escaped data]:text:_default' \
'--codebase[Inspect the full codebase]' \
'--uncommitted[Inspect all dirty changes\: staged, unstaged and untracked (default)]' \
'--staged[Inspect staged changes only]' \
'--dry-run[Replace the provider with a deterministic fixture (preparation and launch stay real)]' \
'--clippy[Review only\: also run \`cargo clippy\` on the packages of changed .rs files (compiles the code\: build scripts and proc macros run)]' \
'--help-agent[Show help limited to agent-facing flags]' \
'--fast[Ask for the priority service tier (service_tier=priority)]' \
'--low[Send reasoning.effort=low]' \
'--medium[Send reasoning.effort=medium]' \
'--high[Send reasoning.effort=high]' \
'--xhigh[Send reasoning.effort=xhigh]' \
'--debug[Write diagnostics (trace, phase timings) to stderr]' \
'--no-redact[Send secrets to the model and embeddings servers unredacted, for this invocation only]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
'*::prompt -- Focus hint for the inspection (lower priority than the task instructions):_default' \
&& ret=0
;;
(simplify)
_arguments "${_arguments_options[@]}" : \
'--base=[Inspect HEAD against its merge base with <ref> (what a pull request would contain)]:ref:_default' \
'--commit=[Inspect one commit against its first parent]:rev:_default' \
'(--codebase --uncommitted --staged --base --commit --depth --max-steps --max-web-searches --dry-run --clippy --model --fast --low --medium --high --xhigh --base-url --timeout --guidance-family --append-prompt --debug)--wait=[Wait for a detached task and print its report]:id:_default' \
'(--codebase --uncommitted --staged --base --commit --clippy --wait --depth --max-steps --max-web-searches --dry-run --model --low --medium --high --xhigh --base-url --timeout --guidance-family --append-prompt)--follow-up=[Continue a successful detached task of this command and workspace with a new prompt]:turn-id:_default' \
'(--max-steps)--depth=[Automatic inspection depth and default reasoning effort (default balanced)]:fast|balanced|thorough:(fast balanced thorough)' \
'--max-steps=[Exact model-step ceiling, overriding the automatic inspection depth]:n:_default' \
'--max-web-searches=[Hosted web searches per model response (default 4 with an API key, uncapped with ChatGPT sign-in)]:n:_default' \
'--model=[Model identifier (default\: OPENAI_MODEL, then the command'\''s default)]:model:_default' \
'--base-url=[Provider base URL (overrides OPENAI_BASE_URL and the ChatGPT default)]:url:_default' \
'--timeout=[Deadline for the provider client and the whole run, such as 90s, 2m or 1m30s]:duration:_default' \
'--guidance-family=[Guidance family\: auto (AGENTS, else CLAUDE), agents, claude or none]:family:(auto agents claude none)' \
'--append-prompt=[A lower-priority hint appended to the task prompt as escaped data]:text:_default' \
'--codebase[Inspect the full codebase]' \
'--uncommitted[Inspect all dirty changes\: staged, unstaged and untracked (default)]' \
'--staged[Inspect staged changes only]' \
'--dry-run[Replace the provider with a deterministic fixture (preparation and launch stay real)]' \
'--clippy[Review only\: also run \`cargo clippy\` on the packages of changed .rs files (compiles the code\: build scripts and proc macros run)]' \
'--help-agent[Show help limited to agent-facing flags]' \
'--fast[Ask for the priority service tier (service_tier=priority)]' \
'--low[Send reasoning.effort=low]' \
'--medium[Send reasoning.effort=medium]' \
'--high[Send reasoning.effort=high]' \
'--xhigh[Send reasoning.effort=xhigh]' \
'--debug[Write diagnostics (trace, phase timings) to stderr]' \
'--no-redact[Send secrets to the model and embeddings servers unredacted, for this invocation only]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
'*::prompt -- Focus hint for the inspection (lower priority than the task instructions):_default' \
&& ret=0
;;
(commit-msg)
_arguments "${_arguments_options[@]}" : \
'--model=[Model identifier (default\: OPENAI_MODEL, then the command'\''s default)]:model:_default' \
'--base-url=[Provider base URL (overrides OPENAI_BASE_URL and the ChatGPT default)]:url:_default' \
'--timeout=[Deadline for the provider client and the whole run, such as 90s, 2m or 1m30s]:duration:_default' \
'--guidance-family=[Guidance family\: auto (AGENTS, else CLAUDE), agents, claude or none]:family:(auto agents claude none)' \
'--append-prompt=[A lower-priority hint appended to the task prompt as escaped data]:text:_default' \
'--max-steps=[Maximum model steps of the agent loop (default 30)]:n:_default' \
'--pprof=[Serve a diagnostics index at <addr> (host\:port) while the command runs]:addr:_default' \
'--amend[Describe the final amended HEAD commit (HEAD plus the staged changes) instead of the staged changes alone]' \
'--fast[Ask for the priority service tier (service_tier=priority)]' \
'--low[Send reasoning.effort=low]' \
'--medium[Send reasoning.effort=medium]' \
'--high[Send reasoning.effort=high]' \
'--xhigh[Send reasoning.effort=xhigh]' \
'--debug[Write diagnostics (trace, phase timings) to stderr]' \
'--no-redact[Send secrets to the model and embeddings servers unredacted, for this invocation only]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
;;
(commit)
_arguments "${_arguments_options[@]}" : \
'--model=[Model identifier (default\: OPENAI_MODEL, then the command'\''s default)]:model:_default' \
'--base-url=[Provider base URL (overrides OPENAI_BASE_URL and the ChatGPT default)]:url:_default' \
'--timeout=[Deadline for the provider client and the whole run, such as 90s, 2m or 1m30s]:duration:_default' \
'--guidance-family=[Guidance family\: auto (AGENTS, else CLAUDE), agents, claude or none]:family:(auto agents claude none)' \
'--append-prompt=[A lower-priority hint appended to the task prompt as escaped data]:text:_default' \
'--max-steps=[Maximum model steps of the agent loop (default 30)]:n:_default' \
'--pprof=[Serve a diagnostics index at <addr> (host\:port) while the command runs]:addr:_default' \
'--amend[Describe the final amended HEAD commit (HEAD plus the staged changes) instead of the staged changes alone]' \
'--fast[Ask for the priority service tier (service_tier=priority)]' \
'--low[Send reasoning.effort=low]' \
'--medium[Send reasoning.effort=medium]' \
'--high[Send reasoning.effort=high]' \
'--xhigh[Send reasoning.effort=xhigh]' \
'--debug[Write diagnostics (trace, phase timings) to stderr]' \
'-i[Show the message as it is written, then ask\: accept, edit, regenerate or quit (needs a terminal)]' \
'--interactive[Show the message as it is written, then ask\: accept, edit, regenerate or quit (needs a terminal)]' \
'--no-redact[Send secrets to the model and embeddings servers unredacted, for this invocation only]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
;;
(hook)
_arguments "${_arguments_options[@]}" : \
'--no-redact[Send secrets to the model and embeddings servers unredacted, for this invocation only]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
":: :_git-agent__subcmd__hook_commands" \
"*::: :->hook" \
&& ret=0

    case $state in
    (hook)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:git-agent-hook-command-$line[1]:"
        case $line[1] in
            (install)
_arguments "${_arguments_options[@]}" : \
'--force[Replace a prepare-commit-msg hook that git-agent did not write]' \
'--no-redact[Send secrets to the model and embeddings servers unredacted, for this invocation only]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
;;
(uninstall)
_arguments "${_arguments_options[@]}" : \
'--no-redact[Send secrets to the model and embeddings servers unredacted, for this invocation only]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
;;
(status)
_arguments "${_arguments_options[@]}" : \
'--no-redact[Send secrets to the model and embeddings servers unredacted, for this invocation only]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
;;
(run)
_arguments "${_arguments_options[@]}" : \
'--no-redact[Send secrets to the model and embeddings servers unredacted, for this invocation only]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
':file -- The commit message file git passes to the hook:_files' \
'::source -- Where git'\''s message came from (message, template, merge, squash, commit), when it has one:_default' \
'::commit -- The commit whose message is reused (source commit):_default' \
&& ret=0
;;
        esac
    ;;
esac
;;
(search)
_arguments "${_arguments_options[@]}" : \
'--rev=[Search the committed tree of this revision instead of the files on disk]:rev:_default' \
'--scope=[Comma-separated paths, relative to the current directory, to search or index]:paths:_default' \
'--limit=[Maximum number of results, 1..100 (default 20)]:n:_default' \
'--format=[Output format\: json|brief for search (default json, brief with --agent), text|json for --ls, tree|json for --ls-files]:format:_default' \
'--min-score=[Minimum final hybrid score, 0 < score <= 1 (default 0.70)]:score:_default' \
'--embedding-model=[Embedding model (default OPENAI_EMBEDDING_MODEL, else text-embedding-3-small)]:model:_default' \
'--embedding-dimensions=[Embedding dimensions (default OPENAI_EMBEDDING_DIMENSIONS, else 1024)]:n:_default' \
'--base-url=[Embeddings base URL (default OPENAI_EMBEDDING_BASE_URL, OPENAI_BASE_URL, https\://api.openai.com/v1)]:url:_default' \
'--timeout=[Per-request timeout for the embeddings endpoint, such as 30s or 2m (default 2m)]:duration:_default' \
'--remote=[Search a remote Git repository (URL or path) through its cached bare clone]:url:_default' \
'--code[Search source-code files only]' \
'--no-tests[Exclude common test files and test directories from results and --ls-files output]' \
'--agent[Serve indexing progress over a private local socket when embeddings need work]' \
'--index[Build embeddings for the selected files without searching]' \
'--reindex[Rebuild embeddings for the selected files and drop stale cache entries]' \
'--ls[List the search indexes of the current project]' \
'--ls-files[List the files stored in the selected search index]' \
'--debug[Write diagnostic events to stderr]' \
'--ls-remotes[List the cached remote repositories]' \
'--no-redact[Send secrets to the model and embeddings servers unredacted, for this invocation only]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
'*::query -- What to look for:_default' \
&& ret=0
;;
(pr-message)
_arguments "${_arguments_options[@]}" : \
'--model=[Model identifier (default\: OPENAI_MODEL, then the command'\''s default)]:model:_default' \
'--base-url=[Provider base URL (overrides OPENAI_BASE_URL and the ChatGPT default)]:url:_default' \
'--timeout=[Deadline for the provider client and the whole run, such as 90s, 2m or 1m30s]:duration:_default' \
'--guidance-family=[Guidance family\: auto (AGENTS, else CLAUDE), agents, claude or none]:family:(auto agents claude none)' \
'--append-prompt=[A lower-priority hint appended to the task prompt as escaped data]:text:_default' \
'--max-steps=[Maximum model steps of the agent loop (default 30)]:n:_default' \
'--pprof=[Serve a diagnostics index at <addr> (host\:port) while the command runs]:addr:_default' \
'--fast[Ask for the priority service tier (service_tier=priority)]' \
'--low[Send reasoning.effort=low]' \
'--medium[Send reasoning.effort=medium]' \
'--high[Send reasoning.effort=high]' \
'--xhigh[Send reasoning.effort=xhigh]' \
'--debug[Write diagnostics (trace, phase timings) to stderr]' \
'--no-redact[Send secrets to the model and embeddings servers unredacted, for this invocation only]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
;;
(release-note)
_arguments "${_arguments_options[@]}" : \
'--out=[Write the Markdown to <file> (checked writable before anything runs) and stream the trace to stdout]:file:_default' \
'--model=[Model identifier (default\: OPENAI_MODEL, then the command'\''s default)]:model:_default' \
'--base-url=[Provider base URL (overrides OPENAI_BASE_URL and the ChatGPT default)]:url:_default' \
'--timeout=[Deadline for the provider client and the whole run, such as 90s, 2m or 1m30s]:duration:_default' \
'--guidance-family=[Guidance family\: auto (AGENTS, else CLAUDE), agents, claude or none]:family:(auto agents claude none)' \
'--append-prompt=[A lower-priority hint appended to the task prompt as escaped data]:text:_default' \
'--max-steps=[Maximum model steps of the agent loop (default 30)]:n:_default' \
'--pprof=[Serve a diagnostics index at <addr> (host\:port) while the command runs]:addr:_default' \
'--fast[Ask for the priority service tier (service_tier=priority)]' \
'--low[Send reasoning.effort=low]' \
'--medium[Send reasoning.effort=medium]' \
'--high[Send reasoning.effort=high]' \
'--xhigh[Send reasoning.effort=xhigh]' \
'--debug[Write diagnostics (trace, phase timings) to stderr]' \
'--no-redact[Send secrets to the model and embeddings servers unredacted, for this invocation only]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
'*::range -- <base> <release>, or one of patch, minor, major (from the latest version tag to HEAD):_default' \
&& ret=0
;;
(explore)
_arguments "${_arguments_options[@]}" : \
'--for=[What the answer should prioritize]:target:((diagnose\:"The reproducer, failure mechanism, bottleneck or regression cause"
change\:"The implementation boundary, affected behavior and focused validation"
behavior\:"Current semantics, contracts and invariants"
owner\:"The authoritative implementation, callers and subsystem boundaries"))' \
'--follow-up=[Continue the session of a previous explore result]:search-id:_default' \
'--debug[Write explore.phase timings and the console trace to stderr]' \
'--fast[Send service_tier=priority with the Responses API request]' \
'--no-redact[Send secrets to the model and embeddings servers unredacted, for this invocation only]' \
'-h[Print help (see more with '\''--help'\'')]' \
'--help[Print help (see more with '\''--help'\'')]' \
'-V[Print version]' \
'--version[Print version]' \
'*::question -- The question, in natural language:_default' \
&& ret=0
;;
(index)
_arguments "${_arguments_options[@]}" : \
'--no-redact[Send secrets to the model and embeddings servers unredacted, for this invocation only]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
":: :_git-agent__subcmd__index_commands" \
"*::: :->index" \
&& ret=0

    case $state in
    (index)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:git-agent-index-command-$line[1]:"
        case $line[1] in
            (sync)
_arguments "${_arguments_options[@]}" : \
'--no-redact[Send secrets to the model and embeddings servers unredacted, for this invocation only]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
;;
(migrate)
_arguments "${_arguments_options[@]}" : \
'--to=[The target schema; only v2 exists]:version:(v2)' \
'--dry-run[Build and validate the migration in temporary storage; commit and push nothing]' \
'--no-redact[Send secrets to the model and embeddings servers unredacted, for this invocation only]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
;;
(gc)
_arguments "${_arguments_options[@]}" : \
'--dry-run[Report what would be removed; change no byte and no modification time]' \
'--no-redact[Send secrets to the model and embeddings servers unredacted, for this invocation only]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
;;
        esac
    ;;
esac
;;
(mcp)
_arguments "${_arguments_options[@]}" : \
'--no-redact[Send secrets to the model and embeddings servers unredacted, for this invocation only]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
;;
(completions)
_arguments "${_arguments_options[@]}" : \
'--no-redact[Send secrets to the model and embeddings servers unredacted, for this invocation only]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
':shell:(bash zsh fish)' \
&& ret=0
;;
        esac
    ;;
esac
}

(( $+functions[_git-agent_commands] )) ||
_git-agent_commands() {
    local commands; commands=(
'project_id:Print the project identifier shared by search metadata and task records' \
'config:Read or change the global configuration (index.remote, search.embeddings, search.model_dir, redact.allow)' \
'review:Launch a detached, evidence-backed read-only code review' \
'simplify:Launch a detached read-only simplification audit' \
'commit-msg:Write a commit message for the staged changes; stdout is the message only' \
'commit:Write a commit message for the staged changes, then run git commit with it' \
'hook:Install, remove or inspect the prepare-commit-msg hook that fills \`git commit\`'\''s message' \
'search:Embedding-backed code search over the files on disk' \
'pr-message:Write the squash-merge message of the current branch versus origin/HEAD; stdout is the message only' \
'release-note:Write GitHub release notes for <base>..<release>, or since the latest version tag (patch|minor|major)' \
'explore:Answer a codebase question with grounded findings; stdout is one JSON object' \
'index:Share search indexes through the index.remote repository (sync, migrate, gc)' \
'mcp:Serve search, explore, review and task tools to coding agents over MCP (stdio)' \
'completions:Print a shell completion script for bash, zsh or fish' \
    )
    _describe -t commands 'git-agent commands' commands "$@"
}
(( $+functions[_git-agent__subcmd__commit_commands] )) ||
_git-agent__subcmd__commit_commands() {
    local commands; commands=()
    _describe -t commands 'git-agent commit commands' commands "$@"
}
(( $+functions[_git-agent__subcmd__commit-msg_commands] )) ||
_git-agent__subcmd__commit-msg_commands() {
    local commands; commands=()
    _describe -t commands 'git-agent commit-msg commands' commands "$@"
}
(( $+functions[_git-agent__subcmd__completions_commands] )) ||
_git-agent__subcmd__completions_commands() {
    local commands; commands=()
    _describe -t commands 'git-agent completions commands' commands "$@"
}
(( $+functions[_git-agent__subcmd__config_commands] )) ||
_git-agent__subcmd__config_commands() {
    local commands; commands=()
    _describe -t commands 'git-agent config commands' commands "$@"
}
(( $+functions[_git-agent__subcmd__explore_commands] )) ||
_git-agent__subcmd__explore_commands() {
    local commands; commands=()
    _describe -t commands 'git-agent explore commands' commands "$@"
}
(( $+functions[_git-agent__subcmd__hook_commands] )) ||
_git-agent__subcmd__hook_commands() {
    local commands; commands=(
'install:Write the prepare-commit-msg hook into the repository'\''s hooks folder (core.hooksPath honoured)' \
'uninstall:Remove the prepare-commit-msg hook, if git-agent wrote it' \
'status:Say whether the prepare-commit-msg hook is git-agent'\''s, another program'\''s, or absent' \
'run:What the installed hook runs\: fill <file> with a generated message when git has none' \
    )
    _describe -t commands 'git-agent hook commands' commands "$@"
}
(( $+functions[_git-agent__subcmd__hook__subcmd__install_commands] )) ||
_git-agent__subcmd__hook__subcmd__install_commands() {
    local commands; commands=()
    _describe -t commands 'git-agent hook install commands' commands "$@"
}
(( $+functions[_git-agent__subcmd__hook__subcmd__run_commands] )) ||
_git-agent__subcmd__hook__subcmd__run_commands() {
    local commands; commands=()
    _describe -t commands 'git-agent hook run commands' commands "$@"
}
(( $+functions[_git-agent__subcmd__hook__subcmd__status_commands] )) ||
_git-agent__subcmd__hook__subcmd__status_commands() {
    local commands; commands=()
    _describe -t commands 'git-agent hook status commands' commands "$@"
}
(( $+functions[_git-agent__subcmd__hook__subcmd__uninstall_commands] )) ||
_git-agent__subcmd__hook__subcmd__uninstall_commands() {
    local commands; commands=()
    _describe -t commands 'git-agent hook uninstall commands' commands "$@"
}
(( $+functions[_git-agent__subcmd__index_commands] )) ||
_git-agent__subcmd__index_commands() {
    local commands; commands=(
'sync:Export every completed revision index to index.remote' \
'migrate:Convert the index.remote repository from schema v1 to schema v2' \
'gc:Remove unreachable index data, locally and in index.remote' \
    )
    _describe -t commands 'git-agent index commands' commands "$@"
}
(( $+functions[_git-agent__subcmd__index__subcmd__gc_commands] )) ||
_git-agent__subcmd__index__subcmd__gc_commands() {
    local commands; commands=()
    _describe -t commands 'git-agent index gc commands' commands "$@"
}
(( $+functions[_git-agent__subcmd__index__subcmd__migrate_commands] )) ||
_git-agent__subcmd__index__subcmd__migrate_commands() {
    local commands; commands=()
    _describe -t commands 'git-agent index migrate commands' commands "$@"
}
(( $+functions[_git-agent__subcmd__index__subcmd__sync_commands] )) ||
_git-agent__subcmd__index__subcmd__sync_commands() {
    local commands; commands=()
    _describe -t commands 'git-agent index sync commands' commands "$@"
}
(( $+functions[_git-agent__subcmd__mcp_commands] )) ||
_git-agent__subcmd__mcp_commands() {
    local commands; commands=()
    _describe -t commands 'git-agent mcp commands' commands "$@"
}
(( $+functions[_git-agent__subcmd__pr-message_commands] )) ||
_git-agent__subcmd__pr-message_commands() {
    local commands; commands=()
    _describe -t commands 'git-agent pr-message commands' commands "$@"
}
(( $+functions[_git-agent__subcmd__project_id_commands] )) ||
_git-agent__subcmd__project_id_commands() {
    local commands; commands=()
    _describe -t commands 'git-agent project_id commands' commands "$@"
}
(( $+functions[_git-agent__subcmd__release-note_commands] )) ||
_git-agent__subcmd__release-note_commands() {
    local commands; commands=()
    _describe -t commands 'git-agent release-note commands' commands "$@"
}
(( $+functions[_git-agent__subcmd__review_commands] )) ||
_git-agent__subcmd__review_commands() {
    local commands; commands=()
    _describe -t commands 'git-agent review commands' commands "$@"
}
(( $+functions[_git-agent__subcmd__search_commands] )) ||
_git-agent__subcmd__search_commands() {
    local commands; commands=()
    _describe -t commands 'git-agent search commands' commands "$@"
}
(( $+functions[_git-agent__subcmd__simplify_commands] )) ||
_git-agent__subcmd__simplify_commands() {
    local commands; commands=()
    _describe -t commands 'git-agent simplify commands' commands "$@"
}

if [ "$funcstack[1]" = "_git-agent" ]; then
    _git-agent "$@"
else
    compdef _git-agent git-agent
fi
