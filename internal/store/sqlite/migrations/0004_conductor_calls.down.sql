DROP TABLE conductor_calls;
