// Back-propagation for a one-hidden-layer perceptron, TABLA Table 3 Backprop 10-9-1.
// Sigmoid hidden and output units, cross-entropy loss (output delta p - y).
ni = 10;                       // inputs
nh = 9;                        // hidden units
no = 1;                        // outputs
n = 1;                         // threads

model_input x[ni];
model_output y[no];
model W1[nh][ni];              // input -> hidden
model W2[no][nh];              // hidden -> output
gradient g1[nh][ni] -> W1;
gradient g2[no][nh] -> W2;

iterator i[0:ni-1];
iterator h[0:nh-1];
iterator o[0:no-1];
iterator t[0:n-1];

learning_rate = 0.1;
mini_batch = 1000;

z[h] = sum[i](W1[h][i] * x[i]);          // forward: hidden pre-activation
a[h] = sigmoid(z[h]);
s[o] = sum[h](W2[o][h] * a[h]);          // output pre-activation
p[o] = sigmoid(s[o]);
d2[o] = p[o] - y[o];                     // output delta
g2[o][h] = d2[o] * a[h];
b[h] = sum[o](d2[o] * W2[o][h]);         // error back-propagated to the hidden layer
d1[h] = b[h] * (a[h] * (1 - a[h]));      // times sigmoid'(z) = a (1 - a)
g1[h][i] = d1[h] * x[i];

W1[h][i] = sum[t](W1[h][i]) / n;
W2[o][h] = sum[t](W2[o][h]) / n;
