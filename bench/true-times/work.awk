# true-times' gawk workload: word counts in associative arrays, regular
# expressions (a test, gsub, match with groups, split on a regexp), sprintf
# and string functions on every line of a generated text.
{
    for (i = 1; i <= NF; i++) {
        freq[$i]++
        bylen[length($i)]++
        if ($i ~ /^[aeiou].*[aeiou]$/)
            vv++
    }
    line = $0
    subs += gsub(/[aeiou]+/, "<&>", line)
    if (match($0, /([a-z]+) ([a-z]+)$/, m))
        last[m[2]] = m[1]
    key = sprintf("%s-%03d", $1, NR % 97)
    seen[key] += NF
    up = toupper(substr($0, 1, 24))
    total += split($0, parts, /[^a-z]+/)
}
END {
    PROCINFO["sorted_in"] = "@val_num_desc"
    k = 0
    for (w in freq) {
        if (++k > 5)
            break
        printf "%s %d\n", w, freq[w]
    }
    n = asorti(seen, keys)
    print subs, vv, total, length(last), n, keys[1], length(bylen)
}
