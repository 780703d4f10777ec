DROP INDEX records_kind_idx;
DROP TABLE records;
