-- a mixed workload: tables, sorting, strings, closures, the GC
local N = tonumber(arg and arg[1]) or 200000
local t = {}
for i = 1, N do t[i] = (i * 7919) % N end
table.sort(t)
local s = {}
for i = 1, N // 4 do s[#s + 1] = string.format("%d:%s", i, tostring(i * 3.5)) end
local joined = table.concat(s, ",")
local count = 0
for w in joined:gmatch("[^,]+") do count = count + #w end
local h = {}
for i = 1, N do h["k" .. (i % 5000)] = (h["k" .. (i % 5000)] or 0) + i end
local function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end
local f = fib(24)
local objs = {}
for i = 1, N // 2 do objs[i] = { x = i, y = { i, i + 1 }, name = "o" .. i } end
table.sort(objs, function(a, b) return a.name < b.name end)
print(count, f, #objs)
