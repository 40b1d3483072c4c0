// Support vector machine (hinge loss), TABLA Table 3 SVM: 54 features.
// Objective max(0, 1 - y <w,x>), y in {-1, +1}; sub-gradient -y * x while the
// margin y <w,x> is below 1, else 0 (CoSMIC Eq. 4).
m = 54;                        // features
n = 1;                         // threads

model_input x[m];
model_output y;
model w[m];
gradient g[m] -> w;

iterator i[0:m-1];
iterator t[0:n-1];

learning_rate = 0.01;
mini_batch = 1000;

d = sum[i](w[i] * x[i]);
c = y * d < 1;                 // 1 while the hinge is active, else 0
g[i] = c * (0 - y) * x[i];

w[i] = sum[t](w[i]) / n;
