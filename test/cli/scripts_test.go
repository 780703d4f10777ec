package cli_test

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"
)

var updateScripts = flag.Bool("update-scripts", false, "rewrite testdata/scripts from the operator guide (needs the guide: see seedText)")

// phrasebook turns the guide's messages into a script's language: the
// guide's own scripts print them as they are, the project's copies in
// English.
type phrasebook struct{ r *strings.Replacer }

func (p phrasebook) say(s string) string {
	if p.r == nil {
		return s
	}
	return p.r.Replace(s)
}

// seedPhrases leaves the guide's words as they are.
var seedPhrases = phrasebook{}

// englishPhrases is the translation of every message and comment of the
// guide's five scripts. A phrase that contains another comes first: the
// replacer takes the earliest listed match at each position.
var englishPhrases = phrasebook{strings.NewReplacer(
	// lifecycle
	"# 完整节点生命周期管理脚本", "# Full node lifecycle",
	"=== 步骤 1: 创建节点 (ENROLL 状态) ===", "=== Step 1: create the node (ENROLL) ===",
	"=== 步骤 2: 管理节点 (ENROLL → MANAGEABLE) ===", "=== Step 2: manage the node (ENROLL → MANAGEABLE) ===",
	"=== 步骤 3: 添加网络端口 ===", "=== Step 3: add the network port ===",
	"=== 步骤 4: 验证节点配置 ===", "=== Step 4: validate the node ===",
	"=== 步骤 5: 提供节点 (MANAGEABLE → AVAILABLE) ===", "=== Step 5: provide the node (MANAGEABLE → AVAILABLE) ===",
	"节点准备完成，当前状态: ", "Node ready, current state: ",
	"当前状态: ", "Current state: ",
	"# 等待状态变更", "# wait for the state to change",
	"等待验证完成...", "Waiting for verification...",
	"# 等待清理完成", "# wait for cleaning to finish",
	"等待清理完成...", "Waiting for cleaning...",
	// deploy
	"# 节点部署脚本", "# Deploy a node",
	"=== 开始部署流程 ===", "=== Deploy ===",
	"# 检查节点状态", "# check the node's state",
	"错误: 节点不在 available 状态，无法部署", "Error: the node is not available, it cannot be deployed",
	"=== 启动部署 (AVAILABLE → DEPLOYING → ACTIVE) ===", "=== Deploying (AVAILABLE → DEPLOYING → ACTIVE) ===",
	"=== 监控部署进度 ===", "=== Watching the deploy ===",
	"供应状态: ", "Provision state: ",
	", 电源状态: ", ", power state: ",
	"✅ 部署成功完成!", "✅ Deployed!",
	"❌ 部署失败!", "❌ Deploy failed!",
	"=== 错误信息 ===", "=== Last error ===",
	"错误信息:", "Last error:",
	"❌ 节点进入错误状态!", "❌ The node is in state error!",
	"=== 验证部署结果 ===", "=== Result ===",
	"节点信息:", "Node:",
	"实例信息:", "Instance:",
	// recover
	"# 错误状态恢复脚本", "# Recover a node from a failure state",
	"使用方法: $0 <节点名称>", "Usage: $0 <node>",
	"使用方法: $0 <操作> <节点1> [节点2] ...", "Usage: $0 <action> <node1> [node2] ...",
	"使用方法: ", "Usage: ",
	"=== 节点错误恢复流程 ===", "=== Recovering the node ===",
	"# 检查当前状态", "# check the current state",
	"# 显示错误信息", "# show the last error",
	"=== 尝试重置到 MANAGEABLE 状态 ===", "=== Resetting to MANAGEABLE ===",
	"新状态: ", "New state: ",
	"✅ 成功重置到 MANAGEABLE 状态", "✅ Back in MANAGEABLE",
	"=== 重新提供节点 ===", "=== Providing the node again ===",
	"❌ 重置失败，需要手动干预", "❌ Reset failed: needs an operator",
	"=== 退出维护模式 ===", "=== Leaving maintenance ===",
	"节点状态正常，无需恢复", "The node is fine: nothing to recover",
	// report
	"# 集群状态监控脚本", "# Cluster report",
	"=== Ironic 集群状态报告 ===", "=== Ironic cluster report ===",
	"生成时间: ", "Generated: ",
	"=== 节点状态统计 ===", "=== Node counts ===",
	"总节点数: ", "Total nodes: ",
	"# 按状态统计", "# count by state",
	"状态分布:", "By state:",
	"=== 详细节点状态 ===", "=== Nodes ===",
	"=== 问题节点检查 ===", "=== Problem nodes ===",
	"# 错误状态节点", "# nodes in state error",
	"❌ 错误状态节点:", "❌ Nodes in state error:",
	"    错误: ", "    error: ",
	"✅ 无错误状态节点", "✅ No node in state error",
	"# 维护模式节点", "# nodes in maintenance",
	"🔧 维护模式节点:", "🔧 Nodes in maintenance:",
	" (原因: ", " (reason: ",
	"✅ 无维护模式节点", "✅ No node in maintenance",
	"=== 电源状态检查 ===", "=== Power check ===",
	": 电源状态错误", ": power state ERROR",
	"=== 导体服务状态 ===", "=== Conductors ===",
	// batch
	"# 批量状态管理脚本", "# Batch operations",
	"操作选项: ", "Actions: ",
	"=== 批量执行操作: ", "=== Batch action: ",
	"处理节点: ", "Node: ",
	"未知操作: ", "Unknown action: ",
	": 操作成功", ": done",
	": 操作失败", ": failed",
	"=== 批量操作完成 ===", "=== Batch done ===",
)}

// TestOperatorScriptsFollowSeed keeps testdata/scripts the guide's flows:
// each is the guide's script made to run against Anvil, in English. With
// -update-scripts it rewrites them. Skips without the guide.
func TestOperatorScriptsFollowSeed(t *testing.T) {
	scripts := seedScriptsOf(t, seedText(t))
	for _, s := range seedScripts {
		want := englishPhrases.say(scripts[s.name])
		if i := strings.IndexFunc(want, func(r rune) bool { return unicode.Is(unicode.Han, r) }); i >= 0 {
			t.Errorf("%s: untranslated text at %q", s.name, want[i:min(len(want), i+40)])
		}
		path := filepath.Join(ownScriptsDir, s.name+".sh")
		if *updateScripts {
			if err := os.MkdirAll(ownScriptsDir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(want), 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want {
			t.Errorf("%s differs from the guide's %s script: run go test ./test/cli -run TestOperatorScriptsFollowSeed -update-scripts", path, s.name)
		}
	}
}
