# bash completion for cygprof                              -*- shell-script -*-
# SPDX-License-Identifier: MIT
#
# Installed as share/bash-completion/completions/cygprof (bash-completion
# loads it when `cygprof` is first completed); or source it from ~/.bashrc.
# Subcommands and options come from cygprof itself (`cygprof --help`,
# `cygprof CMD --help`), so they stay current with the binary, and so do
# the values of options (--sort, --format, --times: _cygprof_values);
# captures are the files whose first bytes are an LMDB file's (or named
# *.data, *.cyg, but not perf's perf.data).

_cygprof_commands()
{
	"${1:-cygprof}" --help 2>/dev/null |
		sed -n '/^commands:/,/^$/s/^  \([a-z][a-z-]*\) .*/\1/p'
}

# The options a command's --help defines: those starting a line of its
# option list (indented 2 to 6 columns), never the ones its descriptions
# mention ("needs a timeline (record --timeline)" is not report's option).
_cygprof_options()
{
	"$1" "$2" --help 2>/dev/null |
		sed -n 's/^ \{2,6\}\(-[A-Za-z0-9], \)\{0,1\}\(--[a-z][a-z-]*=\{0,1\}\).*/\2/p' |
		sort -u
}

# The values of option $3 (--opt or -o) of command $2, from its --help:
# the alternatives of its placeholder (--format=text|json), else the list
# its description gives after its last colon, parentheses left out
# ("order: self (default), total, calls or name"), else the first words
# of a section named after the option ("formats:" for --format).  Prints
# "-" first when the option takes no value, "?" when its value is free.
_cygprof_values()
{
	"$1" "$2" --help 2>/dev/null | awk -v want="$3" '
	# the option want: its placeholder (ph) and description (desc)
	function find(   i, ind, line, short, long, rest, hit) {
		for (i = 1; i <= nl; i++) {
			ind = match(L[i], /[^ ]/) - 1
			if (ind >= 7 && hit) {
				desc = desc " " L[i]
				continue
			}
			if (hit)
				return 1
			if (ind < 2 || ind > 6 || L[i] !~ /^ *-/)
				continue
			line = L[i]
			sub(/^ +/, "", line)
			short = ""
			if (line ~ /^-[A-Za-z0-9], /) {
				short = substr(line, 1, 2)
				line = substr(line, 5)
			}
			if (line !~ /^--[a-z]/)
				continue
			match(line, /^--[a-z][a-z-]*/)
			long = substr(line, 1, RLENGTH)
			if (want != long && (short == "" || want != short))
				continue
			hit = 1
			opt = long
			rest = substr(line, RLENGTH + 1)
			ph = ""
			desc = rest
			if (rest ~ /^\[=/) {
				ph = "" # optional: only as --opt=VALUE, never the next word
			} else if (rest ~ /^=/ || rest ~ /^ [^ ]/) {
				sub(/^=? ?/, "", rest)
				ph = rest
				sub(/ .*/, "", ph)
				sub(/\]$/, "", ph)
				desc = rest
				sub(/^[^ ]*/, "", desc)
			}
		}
		return hit
	}
	{ L[++nl] = $0 }
	END {
		if (!find())
			exit
		if (ph == "") {
			print "-"
			exit
		}
		if (ph ~ /\|/) {
			n = split(ph, parts, "|")
			for (i = 1; i <= n; i++)
				print parts[i]
			exit
		}
		t = desc
		while (gsub(/\([^()]*\)/, "", t))
			;
		if ((i = match(t, /:[^:]*$/)))
			t = substr(t, i + 1)
		gsub(/; or /, ", ", t)
		if ((i = index(t, ";")))
			t = substr(t, 1, i - 1)
		if ((i = index(t, ".")))
			t = substr(t, 1, i - 1)
		gsub(/ or /, ",", t)
		n = split(t, parts, ",")
		for (i = 1; i <= n; i++) {
			v = parts[i]
			gsub(/^ +| +$/, "", v)
			if (v ~ /^[a-z][a-z0-9-]*$/) {
				print v
				k++
			}
		}
		if (k)
			exit
		# a section named after the option: "formats:" for --format
		sect = substr(opt, 3) "s:"
		for (i = 1; i <= nl; i++) {
			if (L[i] == sect) {
				insect = 1
				continue
			}
			if (insect && L[i] == "")
				break
			if (insect && L[i] ~ /^  [a-z]/) {
				split(L[i], w, " ")
				print w[1]
				k++
			}
		}
		if (!k)
			print "?"
	}'
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
		*.data | *.cyg)
			# not perf's own perf.data (its magic "PERFILE2")
			[ "$(od -An -tx1 -N8 "$f" 2>/dev/null | tr -d ' \n')" = 50455246494c4532 ] ||
				printf '%s\n' "$f"
			;;
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
	--push-token-file | --push-tenant-file | --push-basic-auth-file | \
	--push-cacert)
		mapfile -t COMPREPLY < <(compgen -f -- "$cur")
		return
		;;
	--server | --push | --push-interval | --app | --label)
		return # a URL, a duration, a name: nothing to complete
		;;
	esac
	# an option's value: --opt VALUE, --opt=VALUE (bash splits at the "=")
	local opt= pre=
	if [[ $cur == --*=* ]]; then
		opt=${cur%%=*} pre=$opt= cur=${cur#*=}
	elif [ "$cur" = = ] && [[ $prev == -* ]]; then
		opt=$prev cur=
	elif [ "$prev" = = ] && ((COMP_CWORD > 1)); then
		opt=${COMP_WORDS[COMP_CWORD - 2]}
	elif [[ $prev == -* ]]; then
		opt=$prev
	fi
	if [ -n "$opt" ]; then
		local vals
		vals=$(_cygprof_values "${COMP_WORDS[0]}" "$cmd" "$opt")
		if [ -n "$vals" ] && [ "$vals" != - ]; then
			[ "$vals" = "?" ] && return # a pattern, a number: nothing to offer
			mapfile -t COMPREPLY < <(compgen -P "$pre" -W "$vals" -- "$cur")
			return
		fi
		[ -n "$pre" ] && return
	fi
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

# cygprof-annotate is `cygprof annotate`: complete it as that command, with
# the cygprof beside it (its --help is the same), else the one on PATH.
_cygprof_annotate()
{
	local exe=${COMP_WORDS[0]%-annotate}
	if ! [ -x "$exe" ] && ! command -v "$exe" >/dev/null 2>&1; then
		exe=cygprof
	fi
	COMP_WORDS=("$exe" annotate "${COMP_WORDS[@]:1}")
	COMP_CWORD=$((COMP_CWORD + 1))
	_cygprof
}

complete -F _cygprof_annotate cygprof-annotate
