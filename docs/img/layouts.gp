# The three lane layouts of the lowering and the [slot][lane] private array,
# drawn for W = 8 (AVX2 f32, or AVX-512 f32 with ymm) so the lane numbers stay
# legible; backend/lower.c is the reference.  Lane i of a packet belongs to
# instance group g = i / L and works on column s = i % L of each step, so
# step t covers columns t*L .. t*L+L-1 of each of the W/L rows of a packet.
# Each cell of the R x C problem is labelled with the lane that computes it;
# shading alternates per step; colour tells the packets apart.
#
#   cd docs/img && gnuplot layouts.gp      (writes layouts.png)
set terminal pngcairo size 1500,1380 font "DejaVu Sans,13"
set output "layouts.png"

W = 8
NC = 16                       # columns drawn
light(p) = p == 0 ? "#c6dbef" : "#fdd0a2"
dark(p)  = p == 0 ? "#6baed6" : "#fd8d3c"
shade(p, t) = t % 2 == 0 ? light(p) : dark(p)

unset border; unset tics; unset key
set lmargin 0; set rmargin 0; set tmargin 0; set bmargin 0
set xrange [-2.6:22.4]
set multiplot

# ---- program mapping, L = 1 ------------------------------------------------
L = 1; NR = 8
set origin 0, 1 - 10.6/27.6; set size 1, 10.6/27.6
set yrange [-NR - 0.3 : 2.3]
set label "program mapping, L = 1:  one row per lane, a packet holds W = 8 rows; step t is column t of those 8 rows" \
    at -2.4, 1.8 left font ",15"
set label "(cell: the lane that computes element [r, c]; shading alternates per step, colour per packet)" \
    at -2.4, 1.15 left font ",12" tc rgb "#555555"
do for [c=0:NC-1] { set label sprintf("%d", c) at c + 0.5, 0.45 center font ",11" tc rgb "#555555" }
set label "column c = step t" at NC + 0.3, 0.45 left font ",11" tc rgb "#555555"
do for [r=0:NR-1] {
  set label sprintf("r%d", r) at -0.3, -r - 0.5 right font ",12"
  do for [c=0:NC-1] {
    p = 0; t = c; lane = r
    set object rect from c, -r - 1 to c + 1, -r fc rgb shade(p, t) fs solid 1 border lc rgb "#303030"
    set label sprintf("%d", lane) at c + 0.5, -r - 0.5 center font ",12"
  }
}
set label "packet 0 = rows 0-7\n(rows 8-15: packet 1)" at NC + 0.3, -NR/2.0 left font ",12"
plot NaN notitle
unset object; unset label

# ---- partial packets, 1 < L < W (L = 4) ------------------------------------
L = 4; NR = 4
set origin 0, 1 - 17.6/27.6; set size 1, 7.0/27.6
set yrange [-NR - 1.3 : 2.3]
set label "partial packets, L = 4:  W/L = 2 rows per packet; step t is columns 4t .. 4t+3 of each of them" \
    at -2.4, 1.8 left font ",15"
do for [c=0:NC-1] { set label sprintf("%d", c) at c + 0.5, 0.45 center font ",11" tc rgb "#555555" }
set label "column c" at NC + 0.3, 0.45 left font ",11" tc rgb "#555555"
do for [r=0:NR-1] {
  set label sprintf("r%d", r) at -0.3, -r - 0.5 right font ",12"
  do for [c=0:NC-1] {
    p = (r / (W / L)) % 2; t = c / L; lane = (r % (W / L)) * L + c % L
    set object rect from c, -r - 1 to c + 1, -r fc rgb shade(p, t) fs solid 1 border lc rgb "#303030"
    set label sprintf("%d", lane) at c + 0.5, -r - 0.5 center font ",12"
  }
}
do for [t=0:NC/L-1] { set label sprintf("step %d", t) at t*L + L/2.0, -NR - 0.55 center font ",12" }
set label "packet 0 = rows 0-1" at NC + 0.3, -1.0 left font ",12"
set label "packet 1 = rows 2-3" at NC + 0.3, -3.0 left font ",12"
plot NaN notitle
unset object; unset label

# ---- packet-local, L = W ----------------------------------------------------
L = W; NR = 2
set origin 0, 1 - 22.6/27.6; set size 1, 5.0/27.6
set yrange [-NR - 1.3 : 2.3]
set label "packet-local, L = W = 8:  one row per packet; step t is columns 8t .. 8t+7 of that row" \
    at -2.4, 1.8 left font ",15"
do for [c=0:NC-1] { set label sprintf("%d", c) at c + 0.5, 0.45 center font ",11" tc rgb "#555555" }
set label "column c" at NC + 0.3, 0.45 left font ",11" tc rgb "#555555"
do for [r=0:NR-1] {
  set label sprintf("r%d", r) at -0.3, -r - 0.5 right font ",12"
  do for [c=0:NC-1] {
    p = r % 2; t = c / L; lane = c % L
    set object rect from c, -r - 1 to c + 1, -r fc rgb shade(p, t) fs solid 1 border lc rgb "#303030"
    set label sprintf("%d", lane) at c + 0.5, -r - 0.5 center font ",12"
  }
}
do for [t=0:NC/L-1] { set label sprintf("step %d", t) at t*L + L/2.0, -NR - 0.55 center font ",12" }
set label "packet 0 = row 0" at NC + 0.3, -0.5 left font ",12"
set label "packet 1 = row 1" at NC + 0.3, -1.5 left font ",12"
plot NaN notitle
unset object; unset label

# ---- the [slot][lane] private array -----------------------------------------
# lower.c slot_ptr: private array s has its own region of nslots*W*8 bytes
# (room for the widest element) starting at s*nslots*W*8; inside it, lane l
# of slot q is at (q*W + l)*size, so slot q is one aligned vector of W*size
# bytes and consecutive slots are adjacent.  Drawn to scale, 0.5 units per
# 4 bytes, up to the gap that stands for the rest of the region.
set origin 0, 0; set size 1, 5.0/27.6
set yrange [-3.2 : 1.8]
set label "private array, [slot][lane] (W = 8, f32):  lane l of slot q at region + (q*W + l)*4 bytes; slot q is written at step q" \
    at -2.4, 1.3 left font ",15"
do for [q=0:3] {
  x0 = q * 4.0
  do for [l=0:W-1] {
    set object rect from x0 + l*0.5, -1 to x0 + (l + 1)*0.5, 0 fc rgb (q % 2 == 0 ? "#c7e9c0" : "#74c476") fs solid 1 border lc rgb "#303030"
    set label sprintf("%d", l) at x0 + l*0.5 + 0.25, -0.5 center font ",11"
  }
  set label sprintf("slot %d (step %d)", q, q) at x0 + 2, 0.4 center font ",12"
  set label sprintf("+%d B", q * 32) at x0, -1.45 center font ",11" tc rgb "#555555"
}
set label "..." at 16.6, -0.5 center font ",14"
set object rect from 17.2, -1 to 21.4, 0 fc rgb "#eeeeee" fs solid 1 border lc rgb "#303030"
set label "rest of the region\n(room for 8-byte elements)" at 19.3, -0.5 center font ",10" tc rgb "#777777"
set label "+nslots*W*4 B" at 17.2, -1.45 center font ",11" tc rgb "#555555"
set label "next array: +nslots*W*8 B" at 21.4, -1.95 right font ",11" tc rgb "#555555"
set label "lanes 0-7 of a slot are one aligned vector: priv=slot reads or writes it whole (inactive lanes: zero on read, old value blended in on write)" \
    at -2.4, -2.6 left font ",12"
plot NaN notitle
unset object; unset label

unset multiplot
