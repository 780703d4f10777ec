DROP TABLE node_history;
DROP TABLE conductors;
DROP TABLE ports;
DROP TABLE nodes;
