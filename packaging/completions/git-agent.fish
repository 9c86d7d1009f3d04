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
complete -c git-agent -n "__fish_git_agent_needs_command" -f -a "completions" -d 'Print a shell completion script for bash, zsh or fish'
complete -c git-agent -n "__fish_git_agent_using_subcommand project_id" -s h -l help -d 'Print help'
complete -c git-agent -n "__fish_git_agent_using_subcommand project_id" -s V -l version -d 'Print version'
complete -c git-agent -n "__fish_git_agent_using_subcommand config" -l unset -d 'Remove the setting'
complete -c git-agent -n "__fish_git_agent_using_subcommand config" -s h -l help -d 'Print help'
complete -c git-agent -n "__fish_git_agent_using_subcommand config" -s V -l version -d 'Print version'
complete -c git-agent -n "__fish_git_agent_using_subcommand completions" -s h -l help -d 'Print help'
complete -c git-agent -n "__fish_git_agent_using_subcommand completions" -s V -l version -d 'Print version'
