"""DOT graphs written for the tests (not copied from anywhere)."""

# Own test graph in the style of a design-doc figure: HTML-table labels, ports, graph defaults.
TABLES_DOT = """// launch order of program ids, GROUP_M = 2
digraph launch_order {
  graph [rankdir=LR, label="grouped ordering"];
  node [shape=plaintext, fontname="Helvetica"];
  g0 [label=<<TABLE BORDER="0" CELLBORDER="1" CELLSPACING="0">
      <TR><TD COLSPAN="2" BGCOLOR="lightblue"><B>group 0</B></TD></TR>
      <TR><TD PORT="first">pid 0</TD><TD>pid 2 (second column)</TD></TR>
      <TR><TD>pid 1</TD><TD>pid 3</TD></TR></TABLE>>];
  g1 [label=<<TABLE BORDER="0" CELLBORDER="1" CELLSPACING="0">
      <TR><TD PORT="first">pid 4</TD><TD>tl.program_id(axis=0) // num_pid_in_group</TD></TR></TABLE>>];
  link [label="click me", shape=box, URL="javascript:alert(document.cookie)", target="_top"];
  g0:first -> g1:first [label="next group"];
  g1 -> link;
}
"""
