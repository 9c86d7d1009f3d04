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
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
;;
(config)
_arguments "${_arguments_options[@]}" : \
'--unset[Remove the setting]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
':key -- The configuration key; only index.remote exists:_default' \
'::value -- The new value; without it the current value is printed:_default' \
&& ret=0
;;
(search)
_arguments "${_arguments_options[@]}" : \
'--scope=[Comma-separated paths, relative to the current directory, to search or index]:paths:_default' \
'--limit=[Maximum number of results, 1..100 (default 20)]:n:_default' \
'--format=[Output format\: json|brief for search (default json, brief with --agent), text|json for --ls, tree|json for --ls-files]:format:_default' \
'--min-score=[Minimum final hybrid score, 0 < score <= 1 (default 0.70)]:score:_default' \
'--embedding-model=[Embedding model (default OPENAI_EMBEDDING_MODEL, else text-embedding-3-small)]:model:_default' \
'--embedding-dimensions=[Embedding dimensions (default OPENAI_EMBEDDING_DIMENSIONS, else 1024)]:n:_default' \
'--base-url=[Embeddings base URL (default OPENAI_EMBEDDING_BASE_URL, OPENAI_BASE_URL, https\://api.openai.com/v1)]:url:_default' \
'--timeout=[Per-request timeout for the embeddings endpoint, such as 30s or 2m (default 2m)]:duration:_default' \
'--code[Search source-code files only]' \
'--no-tests[Exclude common test files and test directories from results and --ls-files output]' \
'--agent[Serve indexing progress over a private local socket when embeddings need work]' \
'--index[Build embeddings for the selected files without searching]' \
'--reindex[Rebuild embeddings for the selected files and drop stale cache entries]' \
'--ls[List the search indexes of the current project]' \
'--ls-files[List the files stored in the selected search index]' \
'--debug[Write diagnostic events to stderr]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
'*::query -- What to look for:_default' \
&& ret=0
;;
(completions)
_arguments "${_arguments_options[@]}" : \
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
'config:Read or change the global configuration (index.remote)' \
'search:Embedding-backed code search over the files on disk' \
'completions:Print a shell completion script for bash, zsh or fish' \
    )
    _describe -t commands 'git-agent commands' commands "$@"
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
(( $+functions[_git-agent__subcmd__project_id_commands] )) ||
_git-agent__subcmd__project_id_commands() {
    local commands; commands=()
    _describe -t commands 'git-agent project_id commands' commands "$@"
}
(( $+functions[_git-agent__subcmd__search_commands] )) ||
_git-agent__subcmd__search_commands() {
    local commands; commands=()
    _describe -t commands 'git-agent search commands' commands "$@"
}

if [ "$funcstack[1]" = "_git-agent" ]; then
    _git-agent "$@"
else
    compdef _git-agent git-agent
fi
