DROP TABLE allocations;
DROP TABLE portgroups;
