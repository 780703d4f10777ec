DROP INDEX runbooks_owner_idx;
DROP TABLE runbooks;
