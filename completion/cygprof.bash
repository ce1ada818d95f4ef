# bash completion for cygprof                              -*- shell-script -*-
# SPDX-License-Identifier: MIT
#
# Installed as share/bash-completion/completions/cygprof (bash-completion
# loads it when `cygprof` is first completed); or source it from ~/.bashrc.
# Subcommands and options come from cygprof itself (`cygprof --help`,
# `cygprof CMD --help`), so they stay current with the binary; captures are
# the files whose first bytes are an LMDB file's (or named *.data, *.cyg).

_cygprof_commands()
{
	"${1:-cygprof}" --help 2>/dev/null |
		sed -n '/^commands:/,/^$/s/^  \([a-z][a-z-]*\) .*/\1/p'
}

_cygprof_options()
{
	"$1" "$2" --help 2>/dev/null | grep -o -- '--[a-z][a-z-]*=\?' | sort -u
}

# Files of the current directory (or of the directory being typed) that are
# captures: named *.data or *.cyg, or starting like an LMDB file (a 4 KiB
# meta page whose magic 0xBEEFC0DE is at offset 16).
_cygprof_captures()
{
	local cur=$1 f
	for f in "$cur"*; do
		[ -d "$f" ] && { printf '%s/\n' "$f"; continue; }
		[ -f "$f" ] || continue
		case $f in
		*.data | *.cyg) printf '%s\n' "$f" ;;
		*)
			if [ "$(od -An -tx4 -j16 -N4 "$f" 2>/dev/null | tr -d ' ')" = beefc0de ]; then
				printf '%s\n' "$f"
			fi
			;;
		esac
	done
}

_cygprof()
{
	local cur prev cmd i
	cur=${COMP_WORDS[COMP_CWORD]}
	prev=${COMP_WORDS[COMP_CWORD - 1]}
	COMPREPLY=()
	# the subcommand: the first word after cygprof that is not an option
	for ((i = 1; i < COMP_CWORD; i++)); do
		case ${COMP_WORDS[i]} in
		-*) ;;
		*)
			cmd=${COMP_WORDS[i]}
			break
			;;
		esac
	done
	if [ -z "$cmd" ]; then
		if [[ $cur == -* ]]; then
			mapfile -t COMPREPLY < <(compgen -W '--help --version' -- "$cur")
		else
			mapfile -t COMPREPLY < <(compgen -W "$(_cygprof_commands "${COMP_WORDS[0]}") help" -- "$cur")
		fi
		return
	fi
	case $cmd in
	help)
		mapfile -t COMPREPLY < <(compgen -W "$(_cygprof_commands "${COMP_WORDS[0]}")" -- "$cur")
		return
		;;
	record | top)
		# after --, a program and its arguments
		for ((i = 1; i < COMP_CWORD; i++)); do
			if [ "${COMP_WORDS[i]}" = -- ]; then
				mapfile -t COMPREPLY < <(compgen -c -f -- "$cur")
				return
			fi
		done
		;;
	esac
	case $prev in
	-o | --output | -O | --output-of | --plot | --debug-dir | --symfs | --token-file | \
	--push-token-file | --push-cacert)
		mapfile -t COMPREPLY < <(compgen -f -- "$cur")
		return
		;;
	--server | --push | --push-interval | --app | --label)
		return # a URL, a duration, a name: nothing to complete
		;;
	esac
	if [[ $cur == -* ]]; then
		mapfile -t COMPREPLY < <(compgen -W "$(_cygprof_options "${COMP_WORDS[0]}" "$cmd")" -- "$cur")
		# --opt= takes its value: no space after it
		[[ ${#COMPREPLY[@]} -eq 1 && ${COMPREPLY[0]} == *= ]] && compopt -o nospace 2>/dev/null
		return
	fi
	mapfile -t COMPREPLY < <(_cygprof_captures "$cur")
	[[ ${#COMPREPLY[@]} -eq 1 && ${COMPREPLY[0]} == */ ]] && compopt -o nospace 2>/dev/null
}

complete -F _cygprof cygprof
