set terminal pngcairo size 1500,640 font ',10' noenhanced
set output 'anchors.png'
set title 'Time per call relative to the hand AVX-512 kernel (lower is faster; log scale)'
set style data histograms
set style histogram cluster gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set logscale y 2
set yrange [0.0625:32]
set ytics ('1/16' 0.0625, '1/8' 0.125, '1/4' 0.25, '1/2' 0.5, '1' 1, '2' 2, '4' 4, '8' 8, '16' 16, '32' 32)
set grid ytics
set xtics rotate by -35 left
set key outside right top
set arrow from graph 0, first 1 to graph 1, first 1 nohead dt 2 lw 1.5
plot 'anchors.dat' using 2:xtic(1) title 'lanemap chosen', 'anchors.dat' using 3 title 'lanemap best', 'anchors.dat' using 4 title 'hand AVX-512', 'anchors.dat' using 5 title 'plain C -O3', 'anchors.dat' using 6 title 'plain C -O3 -ffast-math', 'anchors.dat' using 7 title 'copy roofline', 'anchors.dat' using 8 title 'TorchInductor', 'anchors.dat' using 9 title 'Halide (hand)'
