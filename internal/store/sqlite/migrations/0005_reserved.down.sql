-- Placeholder for migration 0005, which another branch adds: it keeps the
-- numbers contiguous on the branch that added 0006_events. Delete this pair
-- when merging that branch's 0005 (the runner refuses two files per version).
SELECT 1;
