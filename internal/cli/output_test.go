package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

func num(s string) json.Number { return json.Number(s) }

// nodeRows is a two-node `node list` as the API answers it.
func nodeListing() listing {
	labels, alt := labelled(nodeListFields)
	return listing{columns: labels, alt: alt, rows: [][]any{
		{"84608fd8-83cb-485d-be5b-96eb6a532132", "node-01", nil, nil, "enroll", false},
		{"78446596-6a0a-4341-8394-1716e3157b44", "n2", nil, "power on", "manageable", true},
	}}
}

func TestWriteList(t *testing.T) {
	tests := []struct {
		name string
		opts outputOpts
		l    listing
		want string
	}{
		{"table", outputOpts{format: "table"}, nodeListing(), "" +
			"+--------------------------------------+---------+---------------+-------------+--------------------+-------------+\n" +
			"| UUID                                 | Name    | Instance UUID | Power State | Provisioning State | Maintenance |\n" +
			"+--------------------------------------+---------+---------------+-------------+--------------------+-------------+\n" +
			"| 84608fd8-83cb-485d-be5b-96eb6a532132 | node-01 | None          | None        | enroll             | False       |\n" +
			"| 78446596-6a0a-4341-8394-1716e3157b44 | n2      | None          | power on    | manageable         | True        |\n" +
			"+--------------------------------------+---------+---------------+-------------+--------------------+-------------+\n"},
		{"value", outputOpts{format: "value"}, nodeListing(), "" +
			"84608fd8-83cb-485d-be5b-96eb6a532132 node-01 None None enroll False\n" +
			"78446596-6a0a-4341-8394-1716e3157b44 n2 None power on manageable True\n"},
		{"value with -c labels and aliases, dataset order", outputOpts{format: "value", columns: []string{"Provision State", "Name"}}, nodeListing(),
			"node-01 enroll\nn2 manageable\n"},
		{"-c takes field names too", outputOpts{format: "value", columns: []string{"name"}}, nodeListing(), "node-01\nn2\n"},
		{"csv", outputOpts{format: "csv"}, nodeListing(), "" +
			`"UUID","Name","Instance UUID","Power State","Provisioning State","Maintenance"` + "\n" +
			`"84608fd8-83cb-485d-be5b-96eb6a532132","node-01","","","enroll",False` + "\n" +
			`"78446596-6a0a-4341-8394-1716e3157b44","n2","","power on","manageable",True` + "\n"},
		{"json keeps column order", outputOpts{format: "json", columns: []string{"Name", "Maintenance"}}, nodeListing(),
			"[\n  {\n    \"Name\": \"node-01\",\n    \"Maintenance\": false\n  },\n  {\n    \"Name\": \"n2\",\n    \"Maintenance\": true\n  }\n]\n"},
		{"json noindent", outputOpts{format: "json", noIndent: true, columns: []string{"Name"}}, nodeListing(),
			`[{"Name": "node-01"}, {"Name": "n2"}]` + "\n"},
		{"yaml sorts keys", outputOpts{format: "yaml", columns: []string{"Name", "Maintenance"}}, nodeListing(),
			"- Maintenance: false\n  Name: node-01\n- Maintenance: true\n  Name: n2\n"},
		{"empty table is a blank line", outputOpts{format: "table"}, listing{columns: []string{"UUID"}}, "\n"},
		{"empty table with --print-empty", outputOpts{format: "table", printEmpty: true}, listing{columns: []string{"UUID"}},
			"+------+\n| UUID |\n+------+\n+------+\n"},
		{"empty value prints nothing", outputOpts{format: "value"}, listing{columns: []string{"UUID"}}, ""},
		{"empty json", outputOpts{format: "json"}, listing{columns: []string{"UUID"}}, "[]\n"},
		{"empty yaml", outputOpts{format: "yaml"}, listing{columns: []string{"UUID"}}, "[]\n"},
		{"numbers align right, dicts print as Python", outputOpts{format: "table"},
			listing{columns: []string{"Count", "Props"}, rows: [][]any{{num("7"), map[string]any{"b": "x", "a": num("1")}}, {num("12"), map[string]any{}}}},
			"+-------+--------------------+\n| Count | Props              |\n+-------+--------------------+\n" +
				"|     7 | {'a': 1, 'b': 'x'} |\n|    12 | {}                 |\n+-------+--------------------+\n"},
		{"multi-line and wide cells", outputOpts{format: "table"},
			listing{columns: []string{"K", "V"}, rows: [][]any{{"错误", "a\nbb"}}},
			"+------+----+\n| K    | V  |\n+------+----+\n| 错误 | a  |\n|      | bb |\n+------+----+\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			if err := tt.opts.writeList(&b, tt.l); err != nil {
				t.Fatal(err)
			}
			if b.String() != tt.want {
				t.Errorf("got\n%s\nwant\n%s", b.String(), tt.want)
			}
		})
	}
}

func TestTableGrowsWithWidestCell(t *testing.T) {
	var b strings.Builder
	o := outputOpts{format: "table"}
	l := listing{columns: []string{"P"}, rows: [][]any{{map[string]any{"a": num("1")}}}}
	if err := o.writeList(&b, l); err != nil {
		t.Fatal(err)
	}
	want := "+----------+\n| P        |\n+----------+\n| {'a': 1} |\n+----------+\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

func TestUnknownColumns(t *testing.T) {
	var b strings.Builder
	o := outputOpts{format: "value", columns: []string{"bogus"}}
	err := o.writeList(&b, nodeListing())
	want := "No recognized column names in ['bogus']. Recognized columns are ('UUID', 'Name', 'Instance UUID', 'Power State', 'Provisioning State', 'Maintenance')."
	if err == nil || err.Error() != want {
		t.Errorf("error = %v, want %q", err, want)
	}
}

func nodeRecordSample() record {
	return recordOf(map[string]any{
		"uuid": "84608fd8-83cb-485d-be5b-96eb6a532132", "name": "node-01", "maintenance": true,
		"maintenance_reason": "anchor test", "fault": nil, "properties": map[string]any{"cpus": num("24"), "cpu_arch": "x86_64"},
		"traits": []any{}, "last_error": `say "hi"`, "links": []any{},
	})
}

func TestWriteOne(t *testing.T) {
	tests := []struct {
		name string
		opts outputOpts
		want string
	}{
		{"value keeps the dataset order, not the -c order",
			outputOpts{format: "value", columns: []string{"maintenance", "maintenance_reason", "fault"}},
			"None\nTrue\nanchor test\n"},
		{"json", outputOpts{format: "json", columns: []string{"name", "fault", "properties", "traits"}},
			"{\n  \"fault\": null,\n  \"name\": \"node-01\",\n  \"properties\": {\n    \"cpu_arch\": \"x86_64\",\n    \"cpus\": 24\n  },\n  \"traits\": []\n}\n"},
		{"table", outputOpts{format: "table", columns: []string{"last_error", "properties"}},
			"+------------+------------------------------------+\n" +
				"| Field      | Value                              |\n" +
				"+------------+------------------------------------+\n" +
				"| last_error | say \"hi\"                           |\n" +
				"| properties | {'cpu_arch': 'x86_64', 'cpus': 24} |\n" +
				"+------------+------------------------------------+\n"},
		{"yaml", outputOpts{format: "yaml", columns: []string{"name", "properties", "traits", "fault"}},
			"fault: null\nname: node-01\nproperties:\n  cpu_arch: x86_64\n  cpus: 24\ntraits: []\n"},
		{"shell", outputOpts{format: "shell", prefix: "n_", columns: []string{"name", "last_error", "properties"}},
			"n_last_error=\"say \\\"hi\\\"\"\nn_name=\"node-01\"\nn_properties=\"{'cpu_arch': 'x86_64', 'cpus': 24}\"\n"},
		{"labels select fields", outputOpts{format: "value", columns: []string{"Last Error"}}, "say \"hi\"\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			if err := tt.opts.writeOne(&b, nodeRecordSample()); err != nil {
				t.Fatal(err)
			}
			if b.String() != tt.want {
				t.Errorf("got\n%s\nwant\n%s", b.String(), tt.want)
			}
		})
	}
}

func TestBadFormat(t *testing.T) {
	o := outputOpts{format: "xml"}
	if err := o.writeOne(&strings.Builder{}, nodeRecordSample()); err == nil || !strings.Contains(err.Error(), "invalid choice: 'xml'") {
		t.Errorf("writeOne -f xml: %v", err)
	}
	if err := o.writeList(&strings.Builder{}, nodeListing()); err == nil || !strings.Contains(err.Error(), "invalid choice: 'xml'") {
		t.Errorf("writeList -f xml: %v", err)
	}
}
