-- An id's handle and that handle's record, in one exchange (Store.stored).
-- Single server only: it reads a record key it builds itself, which Redis Cluster
-- refuses; there the store reads the handle and then the record.
-- KEYS[1] the id's HASH (the ids HASH, or its id bucket: Layout.id_key); ARGV[1] the id, ARGV[2] the record key head (nd:{c}:d:).
-- Returns the handle (decimal) and the record, each nil where there is none.
local h = redis.call('HGET', KEYS[1], ARGV[1])
if not h then return {false, false} end
return {h, redis.call('GET', ARGV[2] .. h)}
