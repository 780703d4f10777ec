DROP INDEX records_kind_idx;
DROP INDEX records_name_idx;
DROP TABLE records;
