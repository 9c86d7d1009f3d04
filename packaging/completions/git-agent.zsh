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
(review)
_arguments "${_arguments_options[@]}" : \
'(--codebase --uncommitted --staged --depth --max-steps --max-web-searches --dry-run --model --fast --low --medium --high --xhigh --base-url --timeout --guidance-family --append-prompt --debug)--wait=[Wait for a detached task and print its report]:id:_default' \
'(--max-steps)--depth=[Automatic inspection depth and default reasoning effort (default balanced)]:fast|balanced|thorough:(fast balanced thorough)' \
'--max-steps=[Exact model-step ceiling, overriding the automatic inspection depth]:n:_default' \
'--max-web-searches=[Cap provider-hosted web searches (API-key default 4; ChatGPT auth uncapped)]:n:_default' \
'--model=[Override the model]:model:_default' \
'--base-url=[Override the provider base URL]:url:_default' \
'--timeout=[Deadline for the provider client and the whole agent loop, such as 90s or 5m (none by default)]:duration:_default' \
'--guidance-family=[Project guidance family to read (AGENTS-family, CLAUDE-family or none)]:family:_default' \
'--append-prompt=[Append a lower-priority operator hint to the task prompt]:text:_default' \
'--codebase[Inspect the full codebase]' \
'--uncommitted[Inspect all dirty changes\: staged, unstaged and untracked (default)]' \
'--staged[Inspect staged changes only]' \
'--dry-run[Replace the provider with a deterministic fixture (preparation and launch stay real)]' \
'--help-agent[Show help limited to agent-facing flags]' \
'--fast[Send service_tier=priority]' \
'--low[Send reasoning.effort=low]' \
'--medium[Send reasoning.effort=medium]' \
'--high[Send reasoning.effort=high]' \
'--xhigh[Send reasoning.effort=xhigh]' \
'--debug[Enable diagnostics on stderr]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
'*::prompt -- Focus hint for the inspection (lower priority than the task instructions):_default' \
&& ret=0
;;
(simplify)
_arguments "${_arguments_options[@]}" : \
'(--codebase --uncommitted --staged --depth --max-steps --max-web-searches --dry-run --model --fast --low --medium --high --xhigh --base-url --timeout --guidance-family --append-prompt --debug)--wait=[Wait for a detached task and print its report]:id:_default' \
'(--max-steps)--depth=[Automatic inspection depth and default reasoning effort (default balanced)]:fast|balanced|thorough:(fast balanced thorough)' \
'--max-steps=[Exact model-step ceiling, overriding the automatic inspection depth]:n:_default' \
'--max-web-searches=[Cap provider-hosted web searches (API-key default 4; ChatGPT auth uncapped)]:n:_default' \
'--model=[Override the model]:model:_default' \
'--base-url=[Override the provider base URL]:url:_default' \
'--timeout=[Deadline for the provider client and the whole agent loop, such as 90s or 5m (none by default)]:duration:_default' \
'--guidance-family=[Project guidance family to read (AGENTS-family, CLAUDE-family or none)]:family:_default' \
'--append-prompt=[Append a lower-priority operator hint to the task prompt]:text:_default' \
'--codebase[Inspect the full codebase]' \
'--uncommitted[Inspect all dirty changes\: staged, unstaged and untracked (default)]' \
'--staged[Inspect staged changes only]' \
'--dry-run[Replace the provider with a deterministic fixture (preparation and launch stay real)]' \
'--help-agent[Show help limited to agent-facing flags]' \
'--fast[Send service_tier=priority]' \
'--low[Send reasoning.effort=low]' \
'--medium[Send reasoning.effort=medium]' \
'--high[Send reasoning.effort=high]' \
'--xhigh[Send reasoning.effort=xhigh]' \
'--debug[Enable diagnostics on stderr]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
'*::prompt -- Focus hint for the inspection (lower priority than the task instructions):_default' \
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
'review:Launch a detached, evidence-backed read-only code review' \
'simplify:Launch a detached read-only simplification audit' \
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
(( $+functions[_git-agent__subcmd__review_commands] )) ||
_git-agent__subcmd__review_commands() {
    local commands; commands=()
    _describe -t commands 'git-agent review commands' commands "$@"
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
