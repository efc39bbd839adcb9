-- A query's candidates and their records, in one exchange: what app.index.candidates
-- (candidates, then the MGET after it) does in three to four, by exactly the same rules.
-- Single server only: it reads keys it builds itself (hot bands' sets, records),
-- which Redis Cluster refuses; there the store keeps its per-node pipelines.
-- ARGV[1] the record key head (nd:{c}:d:), ARGV[2] the bucket HASH head (nd:{c}:B{),
-- ARGV[3] the spill keys' head (nd:{c}:S{ for ZSETs, nd:{c}:H{ for packed STRINGs),
-- ARGV[4] the handle to leave out (0: none), ARGV[5] the cap, ARGV[6] how many hot
-- members are read in full, ARGV[7] the most hot members this script reads, then each
-- band key's bucket HASH and field.
-- Returns capped (0/1), how many hot keys were read only in part, the number n of
-- candidates, their n handles ascending, and their n records (nil where there is
-- none); or just -1 when the hot keys' members to read are more than ARGV[7]: Lua
-- counts them several times slower than numpy does, on Redis' one thread, so the
-- caller reads those through its pipelines instead.
local doc_head, hash_head, spill_head = ARGV[1], ARGV[2], ARGV[3]
local exclude, cap, budget = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local hot_most = tonumber(ARGV[7])
local bands = {}
for i = 8, #ARGV do bands[#bands + 1] = ARGV[i] end
local reply_head = {}
local function hot_exit() return -1 end
