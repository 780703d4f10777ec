DROP TABLE node_diagnoses;
