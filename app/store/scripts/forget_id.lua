-- Drop an id's mapping only while it still points at this handle (id_ops.lua). Returns
-- 1 when it dropped it (the caller moves the id buckets' kept count by what was dropped).
-- KEYS[1] the id's HASH (the ids HASH, or its id bucket: Layout.id_key); ARGV[1] the id,
-- ARGV[2] the handle (decimal).
return forget_id(KEYS[1], ARGV[1], ARGV[2])
