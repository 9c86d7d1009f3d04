# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_git_agent_global_optspecs
    string join \n cwd= h/help V/version
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
complete -c git-agent -n "__fish_git_agent_needs_command" -s h -l help -d 'Print help'
complete -c git-agent -n "__fish_git_agent_needs_command" -s V -l version -d 'Print version'
complete -c git-agent -n "__fish_git_agent_needs_command" -f -a "project_id" -d 'Print the project identifier shared by search metadata and task records'
complete -c git-agent -n "__fish_git_agent_needs_command" -f -a "config" -d 'Read or change the global configuration (index.remote)'
complete -c git-agent -n "__fish_git_agent_needs_command" -f -a "commit-msg" -d 'Write a commit message for the staged changes; stdout is the message only'
complete -c git-agent -n "__fish_git_agent_needs_command" -f -a "completions" -d 'Print a shell completion script for bash, zsh or fish'
complete -c git-agent -n "__fish_git_agent_using_subcommand project_id" -s h -l help -d 'Print help'
complete -c git-agent -n "__fish_git_agent_using_subcommand project_id" -s V -l version -d 'Print version'
complete -c git-agent -n "__fish_git_agent_using_subcommand config" -l unset -d 'Remove the setting'
complete -c git-agent -n "__fish_git_agent_using_subcommand config" -s h -l help -d 'Print help'
complete -c git-agent -n "__fish_git_agent_using_subcommand config" -s V -l version -d 'Print version'
complete -c git-agent -n "__fish_git_agent_using_subcommand commit-msg" -l model -d 'Model identifier (default: OPENAI_MODEL, then gpt-5.6-luna)' -r
complete -c git-agent -n "__fish_git_agent_using_subcommand commit-msg" -l base-url -d 'Provider base URL (overrides OPENAI_BASE_URL and the ChatGPT default)' -r
complete -c git-agent -n "__fish_git_agent_using_subcommand commit-msg" -l timeout -d 'Time limit for the whole command and each provider request, such as 90s or 2m (default 2m)' -r
complete -c git-agent -n "__fish_git_agent_using_subcommand commit-msg" -l max-steps -d 'Maximum model steps of the agent loop (default 30)' -r
complete -c git-agent -n "__fish_git_agent_using_subcommand commit-msg" -l guidance-family -d 'Guidance family: auto (AGENTS, else CLAUDE), agents, claude or none' -r -f -a "auto\t''
agents\t''
claude\t''
none\t''"
complete -c git-agent -n "__fish_git_agent_using_subcommand commit-msg" -l append-prompt -d 'A lower-priority hint appended to the task prompt as escaped data' -r
complete -c git-agent -n "__fish_git_agent_using_subcommand commit-msg" -l pprof -d 'Serve a diagnostics index at <addr> (host:port) while the command runs' -r
complete -c git-agent -n "__fish_git_agent_using_subcommand commit-msg" -l fast -d 'Ask for the priority service tier (service_tier=priority)'
complete -c git-agent -n "__fish_git_agent_using_subcommand commit-msg" -l low -d 'Low reasoning effort'
complete -c git-agent -n "__fish_git_agent_using_subcommand commit-msg" -l medium -d 'Medium reasoning effort'
complete -c git-agent -n "__fish_git_agent_using_subcommand commit-msg" -l high -d 'High reasoning effort'
complete -c git-agent -n "__fish_git_agent_using_subcommand commit-msg" -l xhigh -d 'Extra-high reasoning effort'
complete -c git-agent -n "__fish_git_agent_using_subcommand commit-msg" -l debug -d 'Write the loop\'s trace and phase timings to stderr'
complete -c git-agent -n "__fish_git_agent_using_subcommand commit-msg" -s h -l help -d 'Print help'
complete -c git-agent -n "__fish_git_agent_using_subcommand commit-msg" -s V -l version -d 'Print version'
complete -c git-agent -n "__fish_git_agent_using_subcommand completions" -s h -l help -d 'Print help'
complete -c git-agent -n "__fish_git_agent_using_subcommand completions" -s V -l version -d 'Print version'
